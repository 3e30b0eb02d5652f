"""MCP settings, names, the Claude Desktop import and result conversion (no server)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import mcp_types
import pytest

from foldline.config import (
    ConfigError,
    load_config,
    parse_config,
)
from foldline.config_settings import apply_settings_patch
from foldline.config_toml import save_config
from foldline.mcp.naming import offered_names
from foldline.mcp.results import outcome_from_result
from foldline.mcp.settings import McpImportError, parse_claude_desktop, public_server

CONFIG = """
[mcp_servers.files]
command = "python"
args = ["-m", "my_server"]
env = { API_TOKEN = "secret-value-123" }
cwd = "/some/dir"
approval = "always"
timeout = 5

[mcp_servers.files.tools.delete_file]
approval = "ask"
enabled = false

[mcp_servers.remote]
url = "http://127.0.0.1:9000/mcp"
headers = { Authorization = "Bearer header-secret" }
"""


def test_servers_read_write_and_read_back_equal(tmp_path: Path) -> None:
    config = parse_config(CONFIG)
    files, remote = config.mcp_servers["files"], config.mcp_servers["remote"]
    assert files.transport == "stdio" and remote.transport == "http"
    assert files.args == ("-m", "my_server") and files.timeout == 5
    assert files.tool_approval("delete_file") == "ask"
    assert files.tool_approval("read_file") == "always"
    assert not files.tool_enabled("delete_file") and files.tool_enabled("read_file")
    assert remote.approval == "ask" and remote.enabled
    save_config(tmp_path, config)
    assert load_config(tmp_path).mcp_servers == config.mcp_servers
    # The file holds an environment value and a header: only its owner may read it.
    assert stat.S_IMODE((tmp_path / "config.toml").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[mcp_servers.x]\ncommand = "a"\nurl = "http://h/mcp"\n', "not both"),
        ("[mcp_servers.x]\ntimeout = 5\n", "either `command`"),
        ('[mcp_servers.x]\nurl = "ftp://h"\n', "http://"),
        ('[mcp_servers.x]\ncommand = "a"\napproval = "maybe"\n', "approval"),
        ('[mcp_servers."a b"]\ncommand = "a"\n', "letters, digits"),
    ],
)
def test_bad_server_tables_are_refused_with_their_line(table: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        parse_config("[defaults]\n\n" + table)
    assert raised.value.line in (3, 5)  # the table, or the key at fault


def test_env_values_and_headers_are_masked() -> None:
    config = parse_config(CONFIG)
    shown = json.dumps([public_server(name, server) for name, server in config.mcp_servers.items()])
    assert "secret-value-123" not in shown and "header-secret" not in shown
    assert "API_TOKEN" in shown and "Authorization" in shown


def test_offered_names_are_valid_unique_and_explained() -> None:
    long_tool = "t" * 80
    names = offered_names(
        [
            ("files", "read"),
            ("my.server", "get data"),
            ("files", long_tool),
            ("files", long_tool + "x"),
            ("a__b", "c"),
            ("a", "b__c"),
        ]
    )
    offered = [n.name for n in names]
    assert offered[0] == "files__read" and names[0].note is None
    assert offered[1] == "my_server__get_data" and "letters" in (names[1].note or "")
    assert all(len(name) <= 64 for name in offered)
    assert len(set(offered)) == len(offered)
    assert offered[3].endswith("_2") and "already taken" in (names[3].note or "")
    assert offered[5] == "a__b__c_2"


def test_claude_desktop_config_is_imported() -> None:
    text = json.dumps(
        {
            "globalShortcut": "",
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                    "env": {"TOKEN": "t0k3n"},
                },
                "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
            },
        }
    )
    servers = parse_claude_desktop(text)
    assert servers["filesystem"].command == "npx"
    assert servers["filesystem"].args[-1] == "/tmp"
    assert servers["filesystem"].env == {"TOKEN": "t0k3n"}
    assert servers["filesystem"].approval == "ask"
    assert servers["remote"].url == "http://127.0.0.1:9/mcp"
    # The bare `mcpServers` object is accepted too.
    bare = parse_claude_desktop(json.dumps({"x": {"command": "run"}}))
    assert bare["x"].command == "run"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"mcpServers": {}}', "no `mcpServers`"),
        ('{"mcpServers": {"x": {"args": ["a"]}}}', "mcpServers.x"),
        ('{"mcpServers": {"bad name": {"command": "a"}}}', "letters, digits"),
    ],
)
def test_bad_imports_say_why(text: str, message: str) -> None:
    with pytest.raises(McpImportError, match=message):
        parse_claude_desktop(text)


def test_results_keep_text_structure_resources_and_images() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(text="first"),
            mcp_types.ImageContent(data="AAAA", mime_type="image/png"),
            mcp_types.EmbeddedResource(
                resource=mcp_types.TextResourceContents(uri="file:///a.txt", text="inside")
            ),
            mcp_types.EmbeddedResource(
                resource=mcp_types.BlobResourceContents(
                    uri="file:///b.bin", blob="AQID", mime_type="application/octet-stream"
                )
            ),
        ],
        structured_content={"rows": 2},
    )
    outcome = outcome_from_result(result, "srv__tool")
    assert outcome.output.splitlines()[0] == "first"
    assert "[image srv__tool-2.png (image/png)]" in outcome.output
    assert "[resource file:///a.txt (text/plain)]\ninside" in outcome.output
    assert "file:///b.bin" in outcome.output
    assert json.loads(outcome.output[outcome.output.index("{") :]) == {"rows": 2}
    assert [a.media_type for a in outcome.attachments] == ["image/png", "application/octet-stream"]
    # "AAAA" is no PNG: a provider would refuse every later request holding it, so the
    # model gets the image's name and why it is not shown; the blob is kept.
    assert outcome.attachments[0].data_base64 is None
    assert "not shown to the model: declared as image/png but holds bytes of no image" in (
        outcome.output
    )
    assert outcome.attachments[1].data_base64 == "AQID" and outcome.attachments[1].size == 3
    assert not outcome.is_error


def test_structured_content_already_sent_as_text_is_not_repeated() -> None:
    wrapped = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(text="hello")], structured_content={"result": "hello"}
    )
    assert outcome_from_result(wrapped, "t").output == "hello"
    as_json = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(text='{"n": 3}')],
        structured_content={"n": 3},
        is_error=True,
    )
    outcome = outcome_from_result(as_json, "t")
    assert outcome.output == '{"n": 3}' and outcome.is_error


def test_a_settings_save_keeps_the_servers() -> None:
    config = parse_config(CONFIG)
    patched = apply_settings_patch(config, {"compaction": {"threshold": 0.7}})
    assert patched.compaction.threshold == 0.7
    assert patched.mcp_servers == config.mcp_servers
