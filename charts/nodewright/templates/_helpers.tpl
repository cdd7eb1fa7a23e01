{{- define "nodewright.fullname" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "nodewright.serviceAccountName" -}}
{{- default (include "nodewright.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "nodewright.selectorLabels" -}}
app.kubernetes.io/name: nodewright
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nodewright.labels" -}}
{{ include "nodewright.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "nodewright.image" -}}
{{- $tag := default (printf "%s-%s" .Chart.AppVersion (.Values.providers.enabled | replace "," "-")) .Values.image.tag -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{- define "nodewright.kwokEnabled" -}}
{{- if has "kwok" (splitList "," (.Values.providers.enabled | replace " " "")) -}}true{{- end -}}
{{- end -}}
