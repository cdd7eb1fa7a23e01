"""CEL as Dynamic Resource Allocation uses it: the selectors of DeviceClasses and claims'
requests. :mod:`~nodewright.api.cel.parse` reads an expression, :mod:`~nodewright.api.cel.program`
compiles (checks) and evaluates it against a device, with the operators and functions of
:mod:`~nodewright.api.cel.functions` and Kubernetes' value types in
:mod:`~nodewright.api.cel.values`. The API server's validation compiles selectors; the
allocator evaluates them."""
