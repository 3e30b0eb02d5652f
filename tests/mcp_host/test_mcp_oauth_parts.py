"""The pieces of sign-in and of a server's questions that need no server: the loopback
listener, the keychain record, and the form's rules."""

from __future__ import annotations

from pathlib import Path

import httpx2
import keyring
import pytest
from mcp.shared.auth import OAuthToken
from memory_keyring import MemoryKeyring

from foldline.mcp.elicitation import BadAnswer, check_answer, form_defaults
from foldline.mcp.oauth import KeychainTokenStorage, LoopbackCallback, _free_port

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 2},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
        "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]}},
        "ok": {"type": "boolean", "default": True},
    },
    "required": ["name"],
}


def test_form_defaults_and_checked_answers() -> None:
    assert form_defaults(SCHEMA) == {"age": 30, "color": "red", "ok": True}
    assert check_answer(SCHEMA, {"name": "Al", "age": "41", "tags": ["b"], "ok": False}) == {
        "name": "Al",
        "age": 41,
        "tags": ["b"],
        "ok": False,
    }
    for answer, problem in [
        ({}, "Name: required"),
        ({"name": "A"}, "Name: length must be between 2"),
        ({"name": "Al", "age": "200"}, "age: must be between 0 and 150"),
        ({"name": "Al", "age": "x"}, "age: a whole number is needed"),
        ({"name": "Al", "color": "green"}, "color: not one of the choices"),
        ({"name": "Al", "tags": ["c"]}, "tags: not one of the choices"),
        ({"name": "Al", "extra": 1}, "extra: the server did not ask for this field"),
    ]:
        with pytest.raises(BadAnswer, match=problem):
            check_answer(SCHEMA, answer)


async def test_the_loopback_listener_takes_one_answer_and_escapes_what_it_shows() -> None:
    callback = LoopbackCallback(_free_port())
    await callback.open()
    async with httpx2.AsyncClient() as client:
        assert (await client.get(f"http://127.0.0.1:{callback.port}/other")).status_code == 404
        page = await client.get(f"{callback.redirect_uri}?code=abc&state=s1&iss=https%3A%2F%2Fi")
    assert page.status_code == 200 and "Signed in" in page.text
    answer = await callback.wait(5)
    assert (answer.code, answer.state, answer.iss) == ("abc", "s1", "https://i")

    refused = LoopbackCallback(_free_port())
    await refused.open()
    async with httpx2.AsyncClient() as client:
        page = await client.get(
            f"{refused.redirect_uri}?error=access_denied&error_description=%3Cb%3Eno%3C/b%3E"
        )
    assert page.status_code == 400 and "<b>" not in page.text and "&lt;b&gt;" in page.text
    with pytest.raises(RuntimeError, match="refused the sign-in"):
        await refused.wait(5)


async def test_the_keychain_record_is_bound_to_the_url_and_expires(tmp_path: Path) -> None:
    original = keyring.get_keyring()
    keychain = MemoryKeyring()
    keyring.set_keyring(keychain)
    try:
        storage = KeychainTokenStorage("remote", "https://a.example/mcp", tmp_path)
        token = OAuthToken(access_token="at", refresh_token="rt", expires_in=3600)
        await storage.set_tokens(token)
        assert (await storage.get_tokens()).access_token == "at"
        # Another URL under the same name never receives these tokens.
        moved = KeychainTokenStorage("remote", "https://b.example/mcp", tmp_path)
        assert await moved.get_tokens() is None
        # Close to expiry, the token comes back without its access token (refresh first).
        await storage.set_tokens(OAuthToken(access_token="at2", refresh_token="rt2", expires_in=10))
        stale = await storage.get_tokens()
        assert stale.access_token == "" and stale.refresh_token == "rt2"
        storage.forget()
        assert keychain.passwords == {}
    finally:
        keyring.set_keyring(original)


def test_the_oauth_and_roots_keys_survive_a_save_and_are_checked() -> None:
    from foldline.config import ConfigError, parse_config
    from foldline.config_toml import dumps_config

    text = (
        '[mcp_servers.r]\nurl = "https://x.example/mcp"\nroots = ["/tmp"]\n'
        '[mcp_servers.r.oauth]\nclient_id = "abc"\nscopes = ["a", "b"]\nredirect_port = 33418\n'
    )
    config = parse_config(text)
    assert parse_config(dumps_config(config)).mcp_servers == config.mcp_servers
    with pytest.raises(ConfigError, match="client_credentials needs `client_id`"):
        parse_config(
            '[mcp_servers.r]\nurl = "https://x/mcp"\noauth = { grant = "client_credentials" }\n'
        )
