"""What the schemas cannot see: the numbers and names that deploy/'s files must agree on.

Run by deploy/check.sh with the validators' Python (PyYAML comes with kubernetes-validate):

    check-invariants.py K8S_DIR [COMPOSE_JSON]

COMPOSE_JSON is `docker compose config --format json` of deploy/compose.yaml, when compose ran.
Prints one line per broken invariant and exits 1 if there is any.
"""

import json
import re
import sys
from pathlib import Path

import yaml

problems = []


def expect(ok, message):
    if not ok:
        problems.append(message)


def seconds(value):
    """A duration as compose prints it ("30s", "1m30s") or a number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    total, matched = 0.0, False
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|ns)", str(value)):
        matched = True
        total += float(amount) * {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]
    return total if matched else None


def kubernetes(root):
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    listed = set(kustomization.get("resources", []))
    present = {p.name for p in root.glob("*.yaml") if p.name != "kustomization.yaml"}
    for name in sorted(present - listed):
        problems.append(f"k8s: {name} is not in kustomization.yaml's resources")
    for name in sorted(listed - present):
        problems.append(f"k8s: kustomization.yaml lists {name}, which does not exist")

    docs = [d for p in sorted(present) for d in yaml.safe_load_all((root / p).read_text()) if d]
    by_kind = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)

    config = {}
    for config_map in by_kind.get("ConfigMap", []):
        config.update(config_map.get("data", {}))
    grace = float(config.get("MISSIVE_SHUTDOWN_GRACE_SECS", 20))
    for key, port in (("MISSIVE_GRPC_ADDR", 50051), ("MISSIVE_HTTP_ADDR", 8080)):
        expect(
            config.get(key) == f"0.0.0.0:{port}",
            f"k8s: the ConfigMap must set {key}=0.0.0.0:{port} (servers listen on loopback by default)",
        )

    # A setting that holds a secret is read from a Secret, never from the ConfigMap (which any
    # reader of the namespace's configuration sees, and which ends up in logs and dashboards).
    secret_like = re.compile(r"DATABASE_URL|SECRET|PASSWORD|TOKEN|PRIVATE|_KEY($|_)")
    for key in sorted(config):
        expect(not secret_like.search(key), f"k8s: {key} looks like a secret; it belongs in a Secret, not the ConfigMap")
    secrets = {s["metadata"]["name"]: s for s in by_kind.get("Secret", [])}

    deployments = by_kind.get("Deployment", [])
    expect(len(deployments) == 1, "k8s: expected one Deployment")
    for deployment in deployments:
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
        expect(ports == {"grpc": 50051, "http": 8080}, f"k8s: container ports are {ports}")
        pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
        termination = pod.get("terminationGracePeriodSeconds", 30)
        expect(
            termination > pre_stop + grace,
            f"k8s: terminationGracePeriodSeconds ({termination}) must exceed the preStop sleep "
            f"({pre_stop}) plus MISSIVE_SHUTDOWN_GRACE_SECS ({grace:g}), or the kubelet kills a "
            "draining server",
        )
        liveness = container.get("livenessProbe", {})
        window = liveness.get("periodSeconds", 10) * liveness.get("failureThreshold", 3)
        expect(
            window > pre_stop + grace,
            f"k8s: the liveness probe fails a pod after {window} s, within the preStop sleep plus "
            f"the drain ({pre_stop + grace:g} s), during which health answers NOT_SERVING",
        )
        env_from = container.get("envFrom", [])
        referenced = [e["secretRef"] for e in env_from if "secretRef" in e]
        for ref in referenced:
            expect(
                ref["name"] in secrets or ref.get("optional") is True,
                f"k8s: the Deployment reads Secret {ref['name']}, which the base does not define "
                "and which is not marked optional",
            )
        provided = {k for ref in referenced if ref["name"] in secrets for k in secrets[ref["name"]].get("stringData", {})}
        expect("DATABASE_URL" in provided, "k8s: the Deployment's Secrets must provide DATABASE_URL")
        expect(
            any(ref["name"] == "missive-player-tokens" and ref.get("optional") for ref in referenced),
            "k8s: the Deployment must read the player-token secret (MISSIVE_JWT_HS256_SECRET) from "
            "the optional Secret missive-player-tokens",
        )
        readiness = container.get("readinessProbe", {}).get("httpGet", {})
        expect(readiness.get("path") == "/healthz", "k8s: the readiness probe must be httpGet /healthz")
        security = container.get("securityContext", {})
        expect(security.get("readOnlyRootFilesystem") is True, "k8s: the root filesystem must be read-only")
        expect(pod.get("securityContext", {}).get("runAsNonRoot") is True, "k8s: pods must run as non-root")
        for service in by_kind.get("Service", []):
            for port in service["spec"]["ports"]:
                expect(
                    port.get("targetPort") in ports,
                    f"k8s: Service {service['metadata']['name']} targets {port.get('targetPort')}, "
                    "not a named container port",
                )

    for job in by_kind.get("Job", []):
        args = job["spec"]["template"]["spec"]["containers"][0].get("args")
        expect(args == ["migrate"], f"k8s: the migration Job runs {args}, not ['migrate']")

    for hpa in by_kind.get("HorizontalPodAutoscaler", []):
        expect(hpa["spec"].get("minReplicas", 1) >= 2, "k8s: the autoscaler must keep two replicas")


def compose(path):
    services = json.loads(Path(path).read_text())["services"]
    missive = services.get("missive", {})
    env = missive.get("environment", {})
    for key, port in (("MISSIVE_GRPC_ADDR", 50051), ("MISSIVE_HTTP_ADDR", 8080)):
        expect(env.get(key) == f"0.0.0.0:{port}", f"compose: missive must set {key}=0.0.0.0:{port}")
    grace = float(env.get("MISSIVE_SHUTDOWN_GRACE_SECS", 20))
    stop = seconds(missive.get("stop_grace_period", "10s"))
    expect(
        stop is not None and stop > grace,
        f"compose: stop_grace_period ({missive.get('stop_grace_period')}) must exceed "
        f"MISSIVE_SHUTDOWN_GRACE_SECS ({grace:g})",
    )
    expect(
        (missive.get("deploy") or {}).get("replicas", 1) >= 2,
        "compose: run two or more missive replicas",
    )
    condition = missive.get("depends_on", {}).get("migrate", {}).get("condition")
    expect(
        condition == "service_completed_successfully",
        f"compose: missive must wait for the migration to succeed, not {condition}",
    )
    expect(services.get("migrate", {}).get("command") == ["migrate"], "compose: migrate must run `missive migrate`")
    published = {p.get("published") for p in services.get("haproxy", {}).get("ports", [])}
    expect(published == {"50051", "8080"}, f"compose: HAProxy publishes {published}")


def main():
    kubernetes(Path(sys.argv[1]))
    if len(sys.argv) > 2:
        compose(sys.argv[2])
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
