"""Redaction of secret-like values before anything is stored or logged (spec §2).

The token shapes come from detect-secrets' rule set (its regex-based plugins: AWS, GitHub,
GitLab, Slack, Stripe, JWT, SendGrid, Twilio, npm, PyPI...). detect-secrets reports what it
found but not where, so its patterns are run here to find whole spans. A few rules it lacks
complete them: whole private-key blocks, `password=` / `api_key:` style assignments,
passwords in URLs of any scheme, and long high-entropy tokens.

Each span becomes `[REDACTED:<kind>]`. What was found is reported by kind and count, never
by value.

An organisation may also opt into redacting personal data (Organization.redact_personal_data):
e-mail addresses, payment card numbers (those passing the Luhn check) and phone numbers.
`redactor_for(org_id)` is what writes use: it knows the organisation's policy and applies it
to free text, to JSON, and to identifiers (namespaces, keys, tags), which are refused rather
than redacted, since two redacted identifiers would become one.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache

PLACEHOLDER = "[REDACTED:{kind}]"

# detect-secrets plugins used, by secret type -> the kind named in the placeholder. Left out:
# public IP addresses (not secrets), Artifactory's `AP...` shape (matches ordinary words) and
# JSON Web Tokens and npm tokens (OWN_RULES takes them, in linear time: detect-secrets' npm
# pattern reads to the end of the line from every "//").
DETECT_SECRETS_KINDS = {
    "AWS Access Key": "aws_key",
    "Azure Storage Account access key": "azure_storage_key",
    "Basic Auth Credentials": "url_password",
    "Cloudant Credentials": "cloudant_credentials",
    "Discord Bot Token": "discord_token",
    "GitHub Token": "github_token",
    "GitLab Token": "gitlab_token",
    "IBM COS HMAC Credentials": "ibm_credentials",
    "IBM Cloud IAM Key": "ibm_credentials",
    "Mailchimp Access Key": "mailchimp_key",
    "OpenAI Token": "openai_key",
    "PyPI Token": "pypi_token",
    "SendGrid API Key": "sendgrid_key",
    "Slack Token": "slack_token",
    "SoftLayer Credentials": "softlayer_credentials",
    "Square OAuth Secret": "square_secret",
    "Stripe Access Key": "stripe_key",
    "Telegram Bot Token": "telegram_token",
    "Twilio API Key": "twilio_key",
}
# Patterns whose first group is the secret (the rest is context worth keeping, such as the
# user and host around a password in a URL).
VALUE_IN_GROUP = {"Basic Auth Credentials", "Cloudant Credentials", "IBM COS HMAC Credentials",
                  "IBM Cloud IAM Key", "SoftLayer Credentials"}

# "auth" alone is left out: it would take "author: Jane" for a secret.
# Every repetition that can start at many places is bounded (or anchored to the start of a
# run): unbounded, a pattern tried at each of n positions reads to the end of the run from each,
# and a 2 MB body of "a.a.a..." would keep a worker busy for hours (n squared).
KEYWORD = r"[\w.-]{0,40}(?:password|passwd|passphrase|pwd|secret|api[_-]?key|apikey|access[_-]?key|token|credential)[\w.-]{0,40}"

OWN_RULES: list[tuple[str, re.Pattern, bool]] = [
    # (kind, pattern, secret is group 1)
    ("private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)"
    ), False),
    ("aws_secret_key", re.compile(r"(?i)aws.{0,20}?(?:secret|key).{0,20}?[=:]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"), True),
    ("google_api_key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), False),
    ("slack_token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"), False),
    ("stripe_key", re.compile(r"[rs]k_(?:live|test)_[0-9a-zA-Z]{16,}"), False),
    ("url_password", re.compile(r"(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]{0,31}://[^\s:/@]{0,256}:([^\s@/]{1,256})@"),
     True),
    ("assigned_secret", re.compile(
        rf"(?i)\b{KEYWORD}\b[\"']?\s*(?:[:=]|=>|\bis\b)\s*(\"[^\"\n]{{4,}}\"|'[^'\n]{{4,}}'|(?!(?:bearer|basic)\b)[^\s,;\"']{{4,}})"
    ), True),
    ("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"), False),
    ("npm_token", re.compile(r"_authToken=\s*([^\s\"']{8,256})"), True),
    ("bearer_token", re.compile(r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/=-]{16,})"), True),
    # detect-secrets' JWT pattern stops before the signature; take the whole token.
    ("jwt", re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"), False),
]

# Personal data, redacted only for organisations that ask for it. Phone numbers are matched
# conservatively (an international "+" prefix, or the (555) 123-4567 shape) so that dates,
# amounts and identifiers stay as they are.
EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
CARD_CANDIDATE = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
                   r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4})(?![\w-])")


def passes_luhn(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(int(d) for d in reversed(digits)):
        if position % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _personal_spans(text: str) -> list[tuple[int, int, str]]:
    spans = [(*match.span(), "email") for match in EMAIL.finditer(text)]
    for match in CARD_CANDIDATE.finditer(text):
        if passes_luhn(re.sub(r"\D", "", match.group())):
            spans.append((*match.span(), "card_number"))
    for match in PHONE.finditer(text):
        if 7 <= len(re.sub(r"\D", "", match.group())) <= 15:
            spans.append((*match.span(), "phone_number"))
    return spans


HIGH_ENTROPY_CANDIDATE = re.compile(r"(?<![A-Za-z0-9_+=-])[A-Za-z0-9_+=-]{32,}(?![A-Za-z0-9_+=-])")
HIGH_ENTROPY_BITS = 4.3
ALREADY_REDACTED = re.compile(r"\[REDACTED:[a-z_0-9]+\]")


@dataclass
class RedactionResult:
    text: str
    kinds: Counter = field(default_factory=Counter)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def as_provenance(self) -> dict:
        """What happened, for the memory's provenance: kinds and counts, never values."""
        return {"applied": True, "count": self.count, "kinds": dict(sorted(self.kinds.items()))}


@cache
def _detect_secrets_rules() -> list[tuple[str, re.Pattern, bool]]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    rules = []
    for secret_type, plugin in get_mapping_from_secret_type_to_class().items():
        kind = DETECT_SECRETS_KINDS.get(secret_type)
        if kind is None:
            continue
        for pattern in plugin().denylist:
            rules.append((kind, pattern, secret_type in VALUE_IN_GROUP and pattern.groups >= 1))
    return rules


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())


def _looks_random(token: str) -> bool:
    has_classes = any(c.islower() for c in token) and any(c.isupper() for c in token) and any(c.isdigit() for c in token)
    return has_classes and _entropy(token) >= HIGH_ENTROPY_BITS


def redact_text(text: str, *, personal: bool = False) -> RedactionResult:
    """Replace every secret-like span in text, and with personal=True every e-mail address,
    card number and phone number too."""
    spans: list[tuple[int, int, str]] = _personal_spans(text) if personal else []
    for kind, pattern, in_group in (*OWN_RULES, *_detect_secrets_rules()):
        for match in pattern.finditer(text):
            start, end = match.span(1) if in_group and match.group(1) else match.span()
            if end > start:
                spans.append((start, end, kind))
    for match in HIGH_ENTROPY_CANDIDATE.finditer(text):
        if _looks_random(match.group()):
            spans.append((*match.span(), "high_entropy_token"))
    if not spans:
        return RedactionResult(text)

    # Merge overlapping and touching spans; the earliest, longest one names the kind.
    spans.sort(key=lambda span: (span[0], -span[1]))
    merged: list[list] = []
    for start, end, kind in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, kind])
    result = RedactionResult(text)
    pieces, cursor = [], 0
    for start, end, kind in merged:
        if ALREADY_REDACTED.fullmatch(text[start:end]):
            continue
        pieces.append(text[cursor:start])
        pieces.append(PLACEHOLDER.format(kind=kind))
        result.kinds[kind] += 1
        cursor = end
    pieces.append(text[cursor:])
    result.text = "".join(pieces)
    return result


def redact_json(value, kinds: Counter | None = None, *, personal: bool = False):
    """Redact every string (values, and keys too) inside a JSON-like value. Returns
    (redacted value, Counter of kinds)."""
    kinds = Counter() if kinds is None else kinds
    if isinstance(value, str):
        result = redact_text(value, personal=personal)
        kinds.update(result.kinds)
        return result.text, kinds
    if isinstance(value, list):
        return [redact_json(item, kinds, personal=personal)[0] for item in value], kinds
    if isinstance(value, dict):
        return {redact_json(key, kinds, personal=personal)[0]: redact_json(item, kinds, personal=personal)[0]
                for key, item in value.items()}, kinds
    return value, kinds


class IdentifierHoldsSecret(ValueError):
    """An identifier (namespace, key, tag) that holds what redaction would take out."""

    def __init__(self, field: str, kinds: Counter):
        self.field = field
        super().__init__(f"{field} looks like it holds a secret or personal data ({', '.join(sorted(kinds))}); "
                         "use an identifier that is neither")


@dataclass(frozen=True)
class Redactor:
    """One organisation's redaction policy, applied to everything a write stores."""

    personal: bool = False

    def text(self, text: str) -> RedactionResult:
        return redact_text(text, personal=self.personal)

    def plain(self, text: str) -> str:
        """Free text whose redaction need not be reported (reasons, predicates, queries)."""
        return self.text(text).text if text else text

    def json(self, value, kinds: Counter | None = None):
        return redact_json(value, kinds, personal=self.personal)

    def check_identifier(self, value: str | None, *, field: str) -> None:
        """Namespaces, keys and tags identify what they hold: redacting two different ones to
        the same placeholder would merge them, so one holding a secret is refused instead."""
        if value and (found := self.text(value)).count:
            raise IdentifierHoldsSecret(field, found.kinds)


# Read on every write and every search's event: by key, planned once a connection (through the
# ORM it cost ~0.9 ms a read, most of it building the query; docs/adr/0063).
POLICY_SQL = "SELECT redact_personal_data FROM organizations WHERE id = %s"


def redactor_for(org_id) -> Redactor:
    """The organisation's policy, read from the database on each write (a one-row lookup), so a
    change applies to the very next write."""
    from memory_platform.database import prepared_cursor

    with prepared_cursor() as cursor:
        cursor.execute(POLICY_SQL, [org_id])
        row = cursor.fetchone()
    return Redactor(personal=bool(row and row[0]))
