{{/* The chart's name: "nodewright", or nameOverride. */}}
{{- define "nodewright.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: fullnameOverride, else the release name when it contains the chart's
name ("nodewright", "nodewright-prod"), else "<release>-<name>" (as Karpenter's chart does). */}}
{{- define "nodewright.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "nodewright.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "nodewright.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "nodewright.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "nodewright.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodewright.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "nodewright.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nodewright.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* metadata.annotations of every object, when additionalAnnotations has any. */}}
{{- define "nodewright.annotations" -}}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The providers enabled, as a sorted list without blanks: "aws, kwok" -> [aws kwok]. */}}
{{- define "nodewright.providers" -}}
{{- $names := list -}}
{{- range (splitList "," (.Values.providers.enabled | nospace)) -}}
{{- if . -}}{{- $names = append $names . -}}{{- end -}}
{{- end -}}
{{- toJson ($names | uniq | sortAlpha) -}}
{{- end -}}

{{/* "true" when the provider named by the second element of the list is enabled. */}}
{{- define "nodewright.providerEnabled" -}}
{{- $context := index . 0 -}}
{{- if has (index . 1) (include "nodewright.providers" $context | fromJsonArray) -}}true{{- end -}}
{{- end -}}

{{/* The image: controller.image.repository, its tag (default <appVersion>-<providers joined by
"-">, as bin/build tags images) and its digest when given. */}}
{{- define "nodewright.image" -}}
{{- $providers := include "nodewright.providers" . | fromJsonArray -}}
{{- $tag := default (printf "%s-%s" .Chart.AppVersion (join "-" $providers)) .Values.controller.image.tag -}}
{{- if .Values.controller.image.digest -}}
{{- printf "%s:%s@%s" .Values.controller.image.repository $tag .Values.controller.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.controller.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* PROVIDER_OPTIONS: Karpenter's provider settings for the providers that take them, then
providers.options. */}}
{{- define "nodewright.providerOptions" -}}
{{- $options := list -}}
{{- $settings := .Values.settings -}}
{{- if include "nodewright.providerEnabled" (list . "aws") -}}
{{- $options = append $options (printf "aws.vm-memory-overhead-percent=%v" $settings.vmMemoryOverheadPercent) -}}
{{- $options = append $options (printf "aws.reserved-enis=%v" $settings.reservedENIs) -}}
{{- with $settings.interruptionQueue }}{{ $options = append $options (printf "aws.interruption-queue=%s" .) }}{{ end -}}
{{- with $settings.clusterEndpoint }}{{ $options = append $options (printf "aws.cluster-endpoint=%s" .) }}{{ end -}}
{{- with $settings.clusterCABundle }}{{ $options = append $options (printf "aws.cluster-ca-bundle=%s" .) }}{{ end -}}
{{- end -}}
{{- if include "nodewright.providerEnabled" (list . "azure") -}}
{{- with $settings.clusterEndpoint }}{{ $options = append $options (printf "azure.cluster-endpoint=%s" .) }}{{ end -}}
{{- end -}}
{{- with .Values.providers.options }}{{ $options = append $options . }}{{ end -}}
{{- join "," $options -}}
{{- end -}}

{{/* FEATURE_GATES from Karpenter's map of gates. */}}
{{- define "nodewright.featureGates" -}}
{{- $gates := .Values.settings.featureGates -}}
{{- printf "NodeRepair=%v,ReservedCapacity=%v,SpotToSpotConsolidation=%v,NodeOverlay=%v,StaticCapacity=%v,CapacityBuffer=%v" $gates.nodeRepair $gates.reservedCapacity $gates.spotToSpotConsolidation $gates.nodeOverlay $gates.staticCapacity $gates.capacityBuffer -}}
{{- end -}}

{{/* A label selector for the controller's pods where a term has none (Karpenter's chart
does the same for affinity terms and spread constraints). */}}
{{- define "nodewright.withSelector" -}}
{{- $context := index . 0 -}}
{{- $terms := list -}}
{{- range (index . 1) -}}
{{- if hasKey . "labelSelector" -}}
{{- $terms = append $terms . -}}
{{- else -}}
{{- $terms = append $terms (merge (dict "labelSelector" (dict "matchLabels" (include "nodewright.selectorLabels" $context | fromYaml))) .) -}}
{{- end -}}
{{- end -}}
{{- toYaml $terms -}}
{{- end -}}

{{/* .Values.affinity, with the controller's pods as the label selector of every pod
(anti-)affinity term that has none. */}}
{{- define "nodewright.affinity" -}}
{{- $context := . -}}
{{- $affinity := deepCopy .Values.affinity -}}
{{- range $kind := list "podAffinity" "podAntiAffinity" -}}
{{- $terms := index $affinity $kind -}}
{{- if $terms -}}
{{- with $terms.requiredDuringSchedulingIgnoredDuringExecution -}}
{{- $_ := set $terms "requiredDuringSchedulingIgnoredDuringExecution" (include "nodewright.withSelector" (list $context .) | fromYamlArray) -}}
{{- end -}}
{{- range $terms.preferredDuringSchedulingIgnoredDuringExecution -}}
{{- $_ := set . "podAffinityTerm" (include "nodewright.withSelector" (list $context (list .podAffinityTerm)) | fromYamlArray | first) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $affinity -}}
{{- end -}}

{{/* The NodeClass kind of each provider this chart knows: API group and resource. Other
providers' NodeClasses need additionalClusterRoleRules. */}}
{{- define "nodewright.nodeClasses" -}}
kwok: {group: karpenter.kwok.sh, resource: kwoknodeclasses}
aws: {group: karpenter.k8s.aws, resource: ec2nodeclasses}
azure: {group: karpenter.azure.com, resource: aksnodeclasses}
{{- end -}}
