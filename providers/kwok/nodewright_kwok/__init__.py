"""KWOK provider for nodewright: a fake cloud whose instances are Node objects, so
nodewright can be run, tested and simulated without a cloud account.

The hooks live in :mod:`nodewright_kwok.plugin`; the NodeClass is
:class:`nodewright_kwok.nodeclass.KWOKNodeClass`.
"""
