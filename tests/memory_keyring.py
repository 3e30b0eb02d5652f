"""An in-memory keyring, standing in for the OS one in the tests that store API keys."""

from __future__ import annotations

import keyring.backend
import keyring.errors


class MemoryKeyring(keyring.backend.KeyringBackend):
    # Below keyring's "no keyring" backend (priority 0): keyring picks its default among
    # every backend class loaded, once per process, and a positive priority made this
    # class, once imported, the shared default of all the tests that had not set one.
    # Tests set it explicitly with `keyring.set_keyring`.
    priority = -1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise keyring.errors.PasswordDeleteError("not found")
