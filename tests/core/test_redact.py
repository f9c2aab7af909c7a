"""Secret redaction (``reme_core.redact``): what is caught, what is left alone, idempotence, and
redaction inside JSON-like data."""

from __future__ import annotations

import pytest

from reme_core.redact import redact, redact_data

CAUGHT = [
    (
        "key sk-proj-Abcdefghijklmnopqrstuvwxyz012345 ok",
        "key [REDACTED:openai_key] ok",
        "openai_key",
    ),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwx", "[REDACTED:anthropic_key]", "anthropic_key"),
    ("AKIAIOSFODNN7EXAMPLE is the id", "[REDACTED:aws_access_key] is the id", "aws_access_key"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[REDACTED:github_token]", "github_token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghij", "[REDACTED:github_token]", "github_token"),
    ("xoxb-1234567890-abcdefghij", "[REDACTED:slack_token]", "slack_token"),
    ("sk_live_abcdefghijklmnop1234", "[REDACTED:stripe_key]", "stripe_key"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[REDACTED:google_api_key]", "google_api_key"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "[REDACTED:jwt]",
        "jwt",
    ),
    (
        "-H 'Authorization: Bearer abcdef0123456789abcdef'",
        "-H 'Authorization: Bearer [REDACTED:bearer_token]'",
        "bearer_token",
    ),
    (
        "postgres://app:s3cr3t-pw@db:5432/x",
        "postgres://app:[REDACTED:url_password]@db:5432/x",
        "url_password",
    ),
    ('DB_PASSWORD="hunter22"', 'DB_PASSWORD="[REDACTED:secret]"', "secret"),
    ("api_key: abc123def", "api_key: [REDACTED:secret]", "secret"),
    ('{"client_secret": "x9y8z7w6"}', '{"client_secret": "[REDACTED:secret]"}', "secret"),
    ("export DEPLOY_TOKEN=dpl_7f3a9c2e41b8", "export DEPLOY_TOKEN=[REDACTED:secret]", "secret"),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAKC\n-----END RSA PRIVATE KEY-----\nafter",
        "[REDACTED:private_key]\nafter",
        "private_key",
    ),
    (
        "pasted: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt",
        "pasted: [REDACTED:private_key]",
        "private_key",
    ),
]


@pytest.mark.parametrize(("text", "expected", "kind"), CAUGHT)
def test_secrets_are_replaced_by_a_marker_naming_their_kind(text: str, expected: str, kind: str):
    out, counts = redact(text)
    assert out == expected
    assert counts == {kind: 1}
    assert redact(out) == (out, {})  # idempotent: a marker is never redacted again


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens=4096 and tokenizer=bpe, author=alice",
        "The token: is in the vault; password reset is on Monday",
        "Use the sk- prefix for keys; see https://example.com/docs",
        "commit a41c9e2 and ModuleNotFoundError: No module named 'orjson'",
        "ssh-keygen -t ed25519 writes ~/.ssh/id_ed25519",
    ],
)
def test_ordinary_text_is_left_alone(text: str):
    assert redact(text) == (text, {})


def test_every_secret_in_a_text_is_counted():
    text = "a=1 sk-abcdefghijklmnopqrstuvwxyz and sk-zyxwvutsrqponmlkjihgfedcba password=p4ssw0rd"
    out, counts = redact(text)
    assert counts == {"openai_key": 2, "secret": 1}
    assert "abcdefghij" not in out and "p4ssw0rd" not in out


def test_redact_data_reaches_every_string_and_keeps_the_shape():
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "token=abcd1234efgh"}, {"type": "image", "n": 3}],
        "tool_calls": [
            {
                "id": "c1",
                "function": {
                    "name": "deploy",
                    "arguments": '{"key": "sk-abcdefghijklmnopqrstuvwxyz"}',
                },
            }
        ],
        "sk-abcdefghijklmnopqrstuvwxyz": None,  # keys are names, not values: kept
        "weight": 0.5,
    }
    out, counts = redact_data(message)
    assert counts == {"secret": 1, "openai_key": 1}
    assert out["content"] == [
        {"type": "text", "text": "token=[REDACTED:secret]"},
        {"type": "image", "n": 3},
    ]
    assert out["tool_calls"][0]["function"] == {
        "name": "deploy",
        "arguments": '{"key": "[REDACTED:openai_key]"}',
    }
    assert list(out) == list(message) and out["weight"] == 0.5
    assert message["content"][0]["text"] == "token=abcd1234efgh"  # the input is not changed
    assert redact_data(out) == (out, {})
