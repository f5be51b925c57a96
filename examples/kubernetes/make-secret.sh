#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Prints the two Secrets the manifests use, ready for `kubectl apply -f -`:
#   gpuprobe-web-config   web-config.yml (the exporter toolkit's format: TLS and one
#                         bcrypt user), tls.crt and tls.key: a new self-signed EC
#                         certificate for the name "gpuprobe" (the PodMonitor's serverName)
#   gpuprobe-scrape-auth  username and password for Prometheus (the PodMonitor's basicAuth)
# Needs openssl and htpasswd (Debian: openssl, apache2-utils). Nothing is written to disk
# but a private temporary folder, removed on exit. Usage:
#   examples/kubernetes/make-secret.sh [USER] | kubectl apply -f -
# To use your own CA instead, replace tls.crt/tls.key in the first Secret (cert-manager:
# a Certificate with secretName gpuprobe-web-config and dnsNames [gpuprobe] writes both).
set -eu
user=${1:-prometheus}
ns=${GPUPROBE_NAMESPACE:-gpuprobe}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
umask 077

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 365 -subj /CN=gpuprobe \
	-addext subjectAltName=DNS:gpuprobe 2>/dev/null
password=$(openssl rand -hex 24)
hash=$(htpasswd -nbBC 10 "$user" "$password" | cut -d: -f2-)
cat > "$tmp/web-config.yml" <<YAML
# gpuprobe daemon --web-config (the exporter toolkit's web configuration file)
tls_server_config:
  cert_file: tls.crt
  key_file: tls.key
  min_version: TLS12
basic_auth_users:
  $user: '$hash'
YAML

b64() { base64 -w0 < "$1"; }
cat <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: gpuprobe-web-config
  namespace: $ns
  labels:
    app.kubernetes.io/name: gpuprobe
type: Opaque
data:
  web-config.yml: $(b64 "$tmp/web-config.yml")
  tls.crt: $(b64 "$tmp/tls.crt")
  tls.key: $(b64 "$tmp/tls.key")
---
apiVersion: v1
kind: Secret
metadata:
  name: gpuprobe-scrape-auth
  namespace: $ns
  labels:
    app.kubernetes.io/name: gpuprobe
type: kubernetes.io/basic-auth
stringData:
  username: $user
  password: $password
YAML
