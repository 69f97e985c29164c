"""``swafuzz export BUNDLE --out DIR``: a finding as an SGLang maintainer takes it, without
learning swafuzz (issue 26 item 6). :mod:`.command` checks the inputs (exit 2 naming the field)
and writes DIR; :mod:`.text` renders ``README.md`` (launch command, requests, releases, the
SGLang functions on the failing path, expected vs observed) and ``export.json``; the test file
and the fix come from the feature whose path failed (hook ``export.sglang_test``,
:class:`swafuzz.features.export_recipe.Recipe`)."""
