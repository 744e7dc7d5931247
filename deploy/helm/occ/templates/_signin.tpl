{{/*
Sign-in environment of the API: GitHub, Google and OIDC clients from dedicated Secrets, the
recovery account, the password posture, CLI sessions, trusted proxies and the native admin cookie
scope. Rendering fails on the values the API would refuse at startup.
*/}}
{{- define "occ.signInEnv" -}}
{{- $auth := .Values.auth -}}
{{- $gh := $auth.github -}}
{{- $google := $auth.google -}}
{{- $oidc := $auth.oidc -}}
{{- $external := or $gh.enabled $google.enabled $oidc.enabled -}}
{{- $secrets := list .Values.auth.secretName .Values.database.secretName .Values.installation.secretName -}}
{{- if and $external (not (hasPrefix "https://" $auth.baseUrl)) -}}
{{- fail "GitHub, Google and OIDC sign-in need an https auth.baseUrl" -}}
{{- end -}}
{{- if and $external .Values.agentNativeAdmin.enabled -}}
{{- fail "agentNativeAdmin.enabled cannot be combined with GitHub, Google or OIDC sign-in (EXTERNAL_SIGN_IN_NATIVE_ADMIN_UNSUPPORTED)" -}}
{{- end -}}
{{- if and $external (not $auth.recoveryUserId) -}}
{{- fail "auth.recoveryUserId is required with GitHub, Google or OIDC sign-in: a local-password Installation administrator" -}}
{{- end -}}
{{- if and (not $external) $auth.recoveryUserId -}}
{{- fail "auth.recoveryUserId needs GitHub, Google or OIDC sign-in" -}}
{{- end -}}
{{- if not (has $auth.passwordSignIn (list "all" "recovery-only")) -}}
{{- fail "auth.passwordSignIn must be all or recovery-only" -}}
{{- end -}}
{{- if and (eq $auth.passwordSignIn "recovery-only") (not $external) -}}
{{- fail "auth.passwordSignIn recovery-only needs GitHub, Google or OIDC sign-in" -}}
{{- end -}}
{{- if and (or $gh.allowedOrgs $gh.allowedTeams) (not $gh.enabled) -}}
{{- fail "auth.github.allowedOrgs and allowedTeams need auth.github.enabled" -}}
{{- end -}}
{{- if gt (add (len $gh.allowedOrgs) (len $gh.allowedTeams)) 10 -}}
{{- fail "auth.github.allowedOrgs and allowedTeams list at most 10 entries together" -}}
{{- end -}}
{{- if and $google.allowedDomains (not $google.enabled) -}}
{{- fail "auth.google.allowedDomains needs auth.google.enabled" -}}
{{- end -}}
{{- range $name, $p := dict "github" $gh "google" $google "oidc" $oidc -}}
{{- if $p.enabled -}}
{{- if not $p.secretName -}}
{{- fail (printf "auth.%s.secretName is required: a dedicated Secret with the client id and secret" $name) -}}
{{- end -}}
{{- if has $p.secretName $secrets -}}
{{- fail (printf "auth.%s.secretName must be a Secret of its own" $name) -}}
{{- end -}}
{{- $secrets = append $secrets $p.secretName -}}
- name: OCC_AUTH_{{ upper $name }}_CLIENT_ID
  valueFrom:
    secretKeyRef: {name: {{ $p.secretName }}, key: {{ $p.clientIdKey }}}
- name: OCC_AUTH_{{ upper $name }}_CLIENT_SECRET
  valueFrom:
    secretKeyRef: {name: {{ $p.secretName }}, key: {{ $p.clientSecretKey }}}
{{ end -}}
{{- end -}}
{{- if $gh.enabled -}}
{{- range $org := $gh.allowedOrgs -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9-]{0,38}$" $org) -}}
{{- fail "auth.github.allowedOrgs lists lowercase GitHub organization logins" -}}
{{- end -}}
{{- end -}}
{{- range $team := $gh.allowedTeams -}}
{{- if not (regexMatch "^[a-z0-9][a-z0-9-]{0,38}/[a-z0-9][a-z0-9_-]{0,99}$" $team) -}}
{{- fail "auth.github.allowedTeams lists lowercase org/team-slug entries" -}}
{{- end -}}
{{- end -}}
{{- with $gh.allowedOrgs }}
- name: OCC_AUTH_GITHUB_ALLOWED_ORGS
  value: {{ join "," . | quote }}
{{- end }}
{{- with $gh.allowedTeams }}
- name: OCC_AUTH_GITHUB_ALLOWED_TEAMS
  value: {{ join "," . | quote }}
{{- end }}
{{ end -}}
{{- if $google.enabled -}}
{{- range $d := $google.allowedDomains -}}
{{- if not (regexMatch "^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)+[a-z]{2,63}$" $d) -}}
{{- fail "auth.google.allowedDomains lists lowercase DNS domain names" -}}
{{- end -}}
{{- end -}}
{{- with $google.allowedDomains }}
- name: OCC_AUTH_GOOGLE_ALLOWED_DOMAINS
  value: {{ join "," . | quote }}
{{- end }}
{{ end -}}
{{- if $oidc.enabled -}}
{{- if not $oidc.issuer -}}
{{- fail "auth.oidc.issuer is required with auth.oidc.enabled" -}}
{{- end -}}
{{- $urls := list $oidc.authorizationUrl $oidc.tokenUrl $oidc.jwksUrl | compact -}}
{{- if and (ne (len $urls) 0) (ne (len $urls) 3) -}}
{{- fail "auth.oidc.authorizationUrl, tokenUrl and jwksUrl are set together, or all left empty to discover them" -}}
{{- end -}}
{{- range $u := prepend $urls $oidc.issuer -}}
{{- if not (hasPrefix "https://" $u) -}}
{{- fail "auth.oidc URLs must be https" -}}
{{- end -}}
{{- end -}}
{{- if not (has $oidc.tokenAuth (list "client_secret_post" "client_secret_basic")) -}}
{{- fail "auth.oidc.tokenAuth must be client_secret_post or client_secret_basic" -}}
{{- end -}}
{{- if gt (len $oidc.displayName) 40 -}}
{{- fail "auth.oidc.displayName is at most 40 characters" -}}
{{- end }}
- name: OCC_AUTH_OIDC_ISSUER
  value: {{ $oidc.issuer | quote }}
{{- if $urls }}
- name: OCC_AUTH_OIDC_AUTHORIZATION_URL
  value: {{ $oidc.authorizationUrl | quote }}
- name: OCC_AUTH_OIDC_TOKEN_URL
  value: {{ $oidc.tokenUrl | quote }}
- name: OCC_AUTH_OIDC_JWKS_URL
  value: {{ $oidc.jwksUrl | quote }}
{{- end }}
{{- if ne $oidc.tokenAuth "client_secret_post" }}
- name: OCC_AUTH_OIDC_TOKEN_AUTH
  value: {{ $oidc.tokenAuth | quote }}
{{- end }}
{{- with $oidc.displayName }}
- name: OCC_AUTH_OIDC_DISPLAY_NAME
  value: {{ . | quote }}
{{- end }}
{{ end -}}
{{- with $auth.recoveryUserId }}
- name: OCC_AUTH_GITHUB_RECOVERY_USER_ID
  value: {{ . | quote }}
{{- end }}
{{- if ne $auth.passwordSignIn "all" }}
- name: OCC_AUTH_PASSWORD_SIGN_IN
  value: {{ $auth.passwordSignIn | quote }}
{{- end }}
{{- if not $auth.cliSessions.enabled }}
- name: OCC_AUTH_CLI_SESSIONS
  value: disabled
{{- end }}
{{- if ne (int $auth.cliSessions.maxLifetimeSeconds) 28800 }}
{{- if or (lt (int $auth.cliSessions.maxLifetimeSeconds) 900) (gt (int $auth.cliSessions.maxLifetimeSeconds) 28800) -}}
{{- fail "auth.cliSessions.maxLifetimeSeconds must be 900 to 28800" -}}
{{- end }}
- name: OCC_AUTH_CLI_SESSION_MAX_LIFETIME_SECONDS
  value: {{ $auth.cliSessions.maxLifetimeSeconds | quote }}
{{- end }}
{{- with .Values.api.trustedProxy.cidrs }}
{{- range $c := . }}
{{- if or (eq $c "0.0.0.0/0") (eq $c "::/0") -}}
{{- fail "api.trustedProxy.cidrs must not trust every address" -}}
{{- end -}}
{{- end }}
- name: OCC_AUTH_TRUSTED_PROXY_CIDRS
  value: {{ join "," . | quote }}
- name: OCC_AUTH_TRUSTED_PROXY_PRESET
  value: {{ $.Values.api.trustedProxy.preset | quote }}
{{- if eq $.Values.api.trustedProxy.preset "generic" }}
- name: OCC_AUTH_CLIENT_IP_HEADER
  value: {{ required "api.trustedProxy.clientAddressHeader is required with the generic preset" $.Values.api.trustedProxy.clientAddressHeader | quote }}
{{- end }}
{{- end }}
{{- if .Values.agentNativeAdmin.enabled }}
- name: OCC_AGENT_NATIVE_ADMIN_ENABLED
  value: "true"
- name: OCC_AUTH_COOKIE_DOMAIN
  value: {{ required "agentNativeAdmin.cookieDomain is required with agentNativeAdmin.enabled" .Values.agentNativeAdmin.cookieDomain | quote }}
{{- end }}
{{- end -}}
