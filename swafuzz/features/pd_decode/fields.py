"""The decode side of prefill/decode disaggregation's server-level Case fields (the release's
``ServerArgs`` names). Contract: ``SEMANTICS.md`` here."""

from swafuzz.features.case_field import CaseField

FIELDS = (
    CaseField("config", "disaggregation_mode", "str", "null",
              "PD disaggregation role: null (none) or decode (every request is a prompt "
              "prefilled elsewhere and taken over with its first output token)",
              choices=("null", "decode")),
    CaseField("config", "disaggregation_transfer_backend", "str", "mooncake",
              "the KV transfer backend (fake: the release's network-free FakeKVReceiver)",
              choices=("mooncake", "fake")),
    CaseField("config", "num_reserved_decode_tokens", "int", 512,
              "decode tokens reserved per active request when a transferred request is admitted",
              lo=0, hi=4096),
)
