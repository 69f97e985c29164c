"""The radix cache's part of the ``sglang`` target (plain data, imports no SGLang): its typed
slot ``server_tree``, the tree pipeline that runs a server-level Case with
``disable_radix_cache`` false (:func:`.sglang_server.run`, which imports the release: loaded
on read)."""

from swafuzz.features.parts import SGLangPart, lazy


class RadixTreeSGLang(SGLangPart):
    """The ``sglang`` part: the server-level run of a Case with the radix cache on."""

    server_tree = lazy("swafuzz.features.radix_tree.sglang_server:run")
