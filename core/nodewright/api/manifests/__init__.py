"""Turning YAML and JSON manifests into API models: the one loading path of every command.

``simulate`` (its manifests and each scenario ``apply``), ``convert`` and the tests all read
manifests here, so they accept and refuse the same things, in bounded time and memory:

* files are read only when regular and at most :attr:`.limits.Limits.file_bytes` long, as UTF-8;
* YAML is read with limits on nesting depth, alias expansion, documents per file, string
  length and object size (:class:`.limits.Limits`), so no input exhausts the stack, the memory or
  the CPU ("billion laughs" documents are refused before anything expands them);
* retired Karpenter versions are converted (:mod:`nodewright.api.convert`);
* each object is checked as the API server would check it: the schema of built-in kinds
  (:mod:`nodewright.api.kubeschema`: unknown fields, value types, quantities), the model,
  then the object rules (:mod:`nodewright.api.kubevalidation`) and any rules the caller adds
  (Karpenter's, with the installed providers' label domains).

Every problem names where it is (``file:line``), which object (kind and name) and which
field (the manifest's camelCase path, such as ``spec.template.spec.requirements[0].operator``),
and quotes the offending value cut to a readable length. Loading collects every problem
across all files before failing, so one run shows them all.

The loading path, one concept per module: :mod:`.files` finds and reads the files,
:mod:`.documents` reads YAML or JSON text into documents (with line numbers, within
:mod:`.limits`; plain YAML quickly by :mod:`.yamlevents`, the documents' line marks in
:mod:`.marked`), :mod:`.loading` turns documents into models (:mod:`.kinds` says which model
reads each apiVersion and kind), and :mod:`.errors` holds the problems it reports, with the
field paths of :mod:`.fieldpaths` and pydantic's errors in the manifest's words
(:mod:`.modelerrors`).
"""
