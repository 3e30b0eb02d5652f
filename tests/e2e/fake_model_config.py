"""Config text for the UI tests that start Foldline on a config of their own.

`{base_url}` is left for the test to fill in with the fake provider's address.
"""

# The conftest's small 4k model, which the tests extend with a second model or prices.
FAKE_MODEL_CONFIG = """\
[defaults]
model = "fake-model"

[providers.fake]
kind = "openai-compatible"
base_url = "{base_url}"

[models."fake-model"]
provider = "fake"
context_window = 4000
max_output_tokens = 500
"""
