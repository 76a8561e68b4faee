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

{{/*
The parents of daemon.hostCommandDir, but /, as a JSON list: the host
command's init container mounts them read-only at their own paths, so
that the install checks the host's parents (root's, writable by nobody
else) and not the image's.
*/}}
{{- define "kmaint.hostCommandParents" -}}
{{- $parents := list -}}
{{- $d := dir .Values.daemon.hostCommandDir -}}
{{- range until 32 -}}
{{- if ne $d "/" -}}
{{- $parents = append $parents $d -}}
{{- $d = dir $d -}}
{{- end -}}
{{- end -}}
{{- toJson $parents -}}
{{- end }}
