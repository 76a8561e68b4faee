{{/*
Labels on every object: Helm's (release and chart) and the one
config/default puts on every object. Each template adds its own
app.kubernetes.io/name and component; selectors use only
app.kubernetes.io/name, as config/default does, so that an install moved
between the two keeps its pods.
*/}}
{{- define "kmaint.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: kmaint
{{- end }}

{{/* The image both containers run: by digest when one is given. */}}
{{- define "kmaint.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}
