"""The turn loop: what happens between a person's message and the model's last word."""
