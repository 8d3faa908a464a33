{{/* Chart name, overridable. */}}
{{- define "narad-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified name. A release named like the chart (the usual
`helm install narad-operator ...`) gives plain "narad-operator", matching
deploy/narad-operator.yaml.
*/}}
{{- define "narad-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "narad-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "narad-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "narad-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "narad-operator.labels" -}}
{{ include "narad-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: narad
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "narad-operator.chart" . }}
{{- end }}

{{- define "narad-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The ServiceAccount the operator runs as (created or not). */}}
{{- define "narad-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "narad-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
