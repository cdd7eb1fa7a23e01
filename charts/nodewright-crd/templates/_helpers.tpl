{{/* "true" when the provider named by the second element of the list is enabled. */}}
{{- define "nodewright-crd.providerEnabled" -}}
{{- $context := index . 0 -}}
{{- if has (index . 1) (splitList "," ($context.Values.providers.enabled | nospace)) -}}true{{- end -}}
{{- end -}}
