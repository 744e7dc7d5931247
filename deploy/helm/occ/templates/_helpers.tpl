{{/* The release-prefixed base name of every object. */}}
{{- define "occ.fullname" -}}
{{- printf "%s-occ" .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "occ.labels" -}}
app.kubernetes.io/name: occ
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: call with (dict "root" $ "component" "api"). */}}
{{- define "occ.selector" -}}
app.kubernetes.io/name: occ
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "occ.image" -}}
{{- required "images.controller is required: the OCC image, preferably by digest" .Values.images.controller -}}
{{- end -}}

{{/* Environment shared by the API, the worker and the bootstrap Job. */}}
{{- define "occ.appEnv" -}}
- name: NODE_ENV
  value: production
- name: OCC_DATABASE_URL
  valueFrom:
    secretKeyRef: {name: {{ .Values.database.secretName }}, key: {{ .Values.database.appUrlKey }}}
{{- end -}}

{{- define "occ.podSpecCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
{{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.controlPlane.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.controlPlane.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
