"""The rules each feature adds to a Case: one module per feature that has rules beyond the common
ones of :mod:`scenarios.validate`, each with a ``validate(case)`` that raises
:class:`scenarios.schema.CaseError` naming the dotted field and what is allowed.

A feature's record names its module in ``validators`` (``"swafuzz.scenarios.rules.ring:validate"``);
:func:`swafuzz.features.validation.validate_case` runs every record's validators on every Case,
so each ``validate`` decides itself whether the Case uses its fields or ops. The modules import
only :mod:`scenarios.schema`; nothing here names another feature's module.
"""
