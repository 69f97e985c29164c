"""The PD decode side's part of the ``sglang`` target (plain data, imports no SGLang): its
typed slot ``server_takeover``, the pipeline that runs a server-level Case whose server is the
decode side of PD disaggregation (:func:`.sglang_server.run`, which imports the release:
loaded on read)."""

from swafuzz.features.parts import SGLangPart, lazy


class PDDecodeSGLang(SGLangPart):
    """The ``sglang`` part: the server-level run of a decode-side (takeover) Case."""

    server_takeover = lazy("swafuzz.features.pd_decode.sglang_server:run")
