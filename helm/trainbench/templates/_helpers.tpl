{{/*
The chart name, or nameOverride.
*/}}
{{- define "trainbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: RELEASE-NAME, or RELEASE when it already contains the chart name, or fullnameOverride.
Truncated to 63 characters (DNS labels).
*/}}
{{- define "trainbench.fullname" -}}
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

{{/*
chart-version, for the helm.sh/chart label.
*/}}
{{- define "trainbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every object the chart creates.
*/}}
{{- define "trainbench.labels" -}}
helm.sh/chart: {{ include "trainbench.chart" . }}
{{ include "trainbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: trainbench
{{- end }}

{{/*
Selector labels of the operator's pods. The component label keeps them apart from the
benchmark pods the operator creates, which also carry app.kubernetes.io/name: trainbench (with
app.kubernetes.io/instance = the BenchmarkJob's name and component master/trainer/result).
*/}}
{{- define "trainbench.selectorLabels" -}}
app.kubernetes.io/name: {{ include "trainbench.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/*
The operator's ServiceAccount.
*/}}
{{- define "trainbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "trainbench.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The benchmark pods' default image (spec.device cpu; cuda: the same with "-cuda"), tag defaulting
to the appVersion.
*/}}
{{- define "trainbench.workerImage" -}}
{{- printf "%s:%s" .Values.workerImage.repository (default .Chart.AppVersion .Values.workerImage.tag) }}
{{- end }}

{{/*
The operator image, tag defaulting to the appVersion.
*/}}
{{- define "trainbench.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
The namespace the operator watches in scope "namespace".
*/}}
{{- define "trainbench.watchNamespace" -}}
{{- default .Release.Namespace .Values.watchNamespace }}
{{- end }}

{{/*
The leader-election Lease's name.
*/}}
{{- define "trainbench.leaseName" -}}
{{- default (include "trainbench.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/*
The operator's RBAC rules (docs/operator.md, "RBAC: what the operator needs, and why"): exactly the
verbs its code uses, checked against the real API server's audit log (every e2e test fails on a
403 of the operator; tests/helm). Leases are not here: they
get their own Role in the release namespace.
*/}}
{{- define "trainbench.rules" -}}
# The BenchmarkJob informer (list + watch); get when a cached job has missed the operator's own write.
- apiGroups: ["trainbench.dev"]
  resources: ["benchmarkjobs"]
  verbs: ["get", "list", "watch"]
# Status is written with a merge patch on the status subresource.
- apiGroups: ["trainbench.dev"]
  resources: ["benchmarkjobs/status"]
  verbs: ["patch"]
# The runs' master and trainer pods; deletecollection by label (a whole gang in one request),
# delete for single pods (cleanPodPolicy Running).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list", "watch", "create", "delete", "deletecollection"]
# The run's headless Service (removed with the job by garbage collection).
- apiGroups: [""]
  resources: ["services"]
  verbs: ["list", "watch", "create"]
# create/list/watch: the runs' result ConfigMaps. get: also a job's spec.baseline.configMap.
# update/patch (and get): only because the operator creates the per-job reporter Role granting
# them, and RBAC forbids granting what one does not hold.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch", "create", "get", "update", "patch"]
# The per-job reporter ServiceAccount of the master pods.
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["list", "watch", "create"]
# The per-job reporter Role and RoleBinding.
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["list", "watch", "create"]
# Kubernetes Events for run and job transitions.
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create"]
{{- if .Values.kueue.enabled }}
# Kueue (--kueue): the operator is BenchmarkJob's Kueue integration. A Workload per queued job
# (informer, create), its status written when an evicted job gave its pods up and when the job
# ended; spec.suspend written as Kueue decides (patch on the job itself).
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["list", "watch", "create"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/status"]
  verbs: ["patch"]
- apiGroups: ["trainbench.dev"]
  resources: ["benchmarkjobs"]
  verbs: ["patch"]
{{- end }}
{{- end }}
