#!/usr/bin/env python3
"""Offline checks of deploy/k8s/ and the Dockerfile (.ci/run runs this; exit 1 on any failure).

1. Schemas: every manifest against the Kubernetes JSON schemas of the versions in
   K8S_VERSIONS, strict (an unknown field is an error), with kubernetes-validate's library;
   the ServiceMonitor (a CRD, which kubernetes-validate has no schema for) against
   schemas/servicemonitor-v1.schema.json. A kind with no schema is an error, not a skip.
2. Consistency across the manifests: what one names, the other has (labels, ports, DNS name,
   key paths, volumes, the non-root user).
3. The Dockerfile: multi-stage, its build command, the binary's path, USER, ENTRYPOINT.
4. With --binary PATH: the containers' arguments parse with that wirebench (`ARGS --help`).
5. With --self-test: each of a list of breakages (BREAKAGES) fails at least one check.

Usage: validate.py [--binary target/release/wirebench] [--self-test]
"""

import argparse
import copy
import functools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

# The oldest Kubernetes minor these manifests claim and the newest kubernetes-validate has.
K8S_VERSIONS = ["1.30.0", "1.37.0"]
HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SERVICEMONITOR_SCHEMA = HERE / "schemas" / "servicemonitor-v1.schema.json"
# The runtime bases whose shell utilities the init containers' `install` needs.
BASES_WITH_INSTALL = {"debian:bookworm-slim"}

failures = []
# Set while the self-test breaks the files on purpose: its failures are expected.
quiet = False


def fail(msg):
    failures.append(msg)
    if not quiet:
        print(f"FAIL {msg}")


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def load_manifests():
    """(file name, document) for every YAML document in deploy/k8s/*.yaml."""
    docs = []
    for path in sorted(HERE.glob("*.yaml")):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((path.name, doc))
    return docs


def validate_schemas(docs):
    with open(SERVICEMONITOR_SCHEMA) as f:
        sm_schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(sm_schema)
    sm_validator = jsonschema.Draft202012Validator(sm_schema)
    for name, doc in docs:
        what = f"{name}: {doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if doc.get("apiVersion") == "monitoring.coreos.com/v1" and doc.get("kind") == "ServiceMonitor":
            errors = sorted(sm_validator.iter_errors(doc), key=lambda e: list(e.path))
            for e in errors:
                fail(f"{what}: {'.'.join(map(str, e.path))}: {e.message}")
            if not errors:
                print(f"ok   {what} (vendored ServiceMonitor schema)")
            continue
        for version in K8S_VERSIONS:
            error = kubernetes_error(json.dumps(doc, sort_keys=True), version)
            if error:
                fail(f"{what}: {error}")
            else:
                print(f"ok   {what} (Kubernetes {version}, strict)")


@functools.lru_cache(maxsize=None)
def kubernetes_error(doc_json, version):
    """Why a document (as JSON) fails Kubernetes `version`'s strict schema, or None. Cached:
    the self-test checks the unchanged documents again for every breakage."""
    try:
        kubernetes_validate.validate(json.loads(doc_json), version, strict=True)
        return None
    except ValidationError as e:
        return f"Kubernetes {version}: {'.'.join(map(str, e.path))}: {e.message}"
    except SchemaNotFoundError as e:
        return e.message


def one(docs, kind):
    """The one object of `kind` (the checks below expect exactly one of each)."""
    found = [d for _, d in docs if d["kind"] == kind]
    if len(found) != 1:
        raise SystemExit(f"FAIL expected one {kind}, found {len(found)}")
    return found[0]


def flag(args, name):
    """The value after `name` in an argument list (None when absent)."""
    return args[args.index(name) + 1] if name in args else None


def subset(small, big):
    return all(big.get(k) == v for k, v in small.items())


def container_port(container, port):
    """A probe's or Service's port (a number, or a container port's name) as a number."""
    if isinstance(port, int):
        return port
    named = [p["containerPort"] for p in container.get("ports", []) if p.get("name") == port]
    return named[0] if named else None


def mounted_volume(container, path):
    """(volume name, mountPath, readOnly) of the mount at `path` or at its directory."""
    for m in container.get("volumeMounts", []):
        if os.path.dirname(path) == m["mountPath"] or path == m["mountPath"]:
            return m["name"], m["mountPath"], m.get("readOnly", False)
    return None


def check_key_chain(what, pod, container, key_path, secret):
    """`key_path` (a flag's) is in a memory emptyDir that an init container fills with
    `install -m 0400 SRC key_path`, SRC being the Secret's key mounted read-only."""
    vols = {v["name"]: v for v in pod["volumes"]}
    m = mounted_volume(container, key_path)
    if not check(m is not None, f"{what}: the key file {key_path} is on no volume"):
        return
    vol = vols[m[0]]
    check(vol.get("emptyDir", {}).get("medium") == "Memory", f"{what}: {m[0]} is not a memory emptyDir")
    copies = [c for c in pod.get("initContainers", []) if c.get("command", [])[-1:] == [key_path]]
    if not check(len(copies) == 1, f"{what}: no init container writes {key_path}"):
        return
    cmd = copies[0]["command"]
    check(cmd[:3] == ["install", "-m", "0400"] and len(cmd) == 5, f"{what}: the key copy is not `install -m 0400 SRC DST`: {cmd}")
    src = cmd[3]
    sm = mounted_volume(copies[0], src)
    if not check(sm is not None and "secret" in vols[sm[0]], f"{what}: the copy's source {src} is not on a Secret volume"):
        return
    check(sm[2], f"{what}: the Secret volume is mounted writable")
    sv = vols[sm[0]]["secret"]
    check(sv["secretName"] == secret["metadata"]["name"], f"{what}: Secret {sv['secretName']} is not secret.yaml's")
    items = {i["path"]: i["key"] for i in sv.get("items", [])}
    key = items.get(os.path.basename(src))
    check(key is not None, f"{what}: the Secret volume has no item at {os.path.basename(src)}")
    check(key in secret.get("stringData", {}) or key in secret.get("data", {}), f"{what}: the Secret has no key {key}")
    dm = mounted_volume(copies[0], key_path)
    check(dm is not None and dm[0] == m[0] and not dm[2], f"{what}: the init container does not write {m[0]}")


# A Kubernetes resource.Quantity (k8s.io/apimachinery/pkg/api/resource): the schemas take
# any string, the API server refuses "64 Mi".
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$")


def check_quantities(what, node):
    """Every quantity (resources, sizeLimit) under `node` is well-formed."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("requests", "limits") and isinstance(v, dict):
                for rk, q in v.items():
                    check(QUANTITY.match(str(q)) is not None, f"{what}: {k}.{rk} {q!r} is not a quantity")
            elif k == "sizeLimit":
                check(QUANTITY.match(str(v)) is not None, f"{what}: sizeLimit {v!r} is not a quantity")
            else:
                check_quantities(what, v)
    elif isinstance(node, list):
        for v in node:
            check_quantities(what, v)


def check_pod_security(what, pod, uid):
    sc = pod.get("securityContext", {})
    check(sc.get("runAsNonRoot") is True, f"{what}: runAsNonRoot is not true")
    check(sc.get("runAsUser") == uid, f"{what}: runAsUser {sc.get('runAsUser')} is not the Dockerfile's USER {uid}")
    check(sc.get("seccompProfile", {}).get("type") == "RuntimeDefault", f"{what}: no RuntimeDefault seccomp profile")
    for c in pod.get("initContainers", []) + pod["containers"]:
        csc = c.get("securityContext", {})
        cw = f"{what} container {c['name']}"
        check(csc.get("readOnlyRootFilesystem") is True, f"{cw}: root file system not read-only")
        check(csc.get("allowPrivilegeEscalation") is False, f"{cw}: privilege escalation allowed")
        check(csc.get("capabilities", {}).get("drop") == ["ALL"], f"{cw}: does not drop ALL capabilities")
        check("add" not in csc.get("capabilities", {}), f"{cw}: adds capabilities")
        check("runAsUser" not in csc or csc["runAsUser"] == uid, f"{cw}: another runAsUser")
        req = c.get("resources", {}).get("requests", {})
        check("cpu" in req and "memory" in req, f"{cw}: no cpu and memory requests")


def check_consistency(docs, docker):
    ns = one(docs, "Namespace")["metadata"]["name"]
    secret = one(docs, "Secret")
    ds = one(docs, "DaemonSet")
    svc = one(docs, "Service")
    job = one(docs, "Job")
    sm = one(docs, "ServiceMonitor")
    pvc = one(docs, "PersistentVolumeClaim")
    for name, d in docs:
        check_quantities(f"{name}: {d['kind']}/{d['metadata']['name']}", d)
        if d["kind"] != "Namespace":
            check(d["metadata"].get("namespace") == ns, f"{d['kind']}/{d['metadata']['name']} is not in namespace {ns}")

    pod = ds["spec"]["template"]["spec"]
    pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    daemon = one_container(pod, "DaemonSet")
    args = daemon["args"]
    check(subset(ds["spec"]["selector"]["matchLabels"], pod_labels), "the DaemonSet's selector does not match its pods")
    check(args[0] == "serve", f"the DaemonSet runs `{args[0]}`, not `serve`")

    # The Service: headless, selects the daemons and not the mesh Job's pod, ports by name.
    check(svc["spec"].get("clusterIP") == "None", "the Service is not headless (clusterIP: None)")
    check(subset(svc["spec"]["selector"], pod_labels), "the Service does not select the DaemonSet's pods")
    job_labels = job["spec"]["template"]["metadata"].get("labels", {})
    check(not subset(svc["spec"]["selector"], job_labels), "the Service selects the mesh Job's pod too")
    svc_ports = {p["name"]: p for p in svc["spec"]["ports"]}
    for p in svc_ports.values():
        target = container_port(daemon, p.get("targetPort", p["port"]))
        check(target == p["port"], f"Service port {p['name']} ({p['port']}) reaches container port {target}")

    # Ports: --port is the control port, the crate's default; --metrics the probe's and metrics port.
    default_port = rust_default_port()
    control = container_port(daemon, "control")
    check(int(flag(args, "--port") or default_port) == control, f"serve --port is not the control container port {control}")
    check(control == default_port, f"the control port {control} is not wirebench_net::DEFAULT_PORT {default_port}")
    metrics_addr, metrics_port = flag(args, "--metrics"), None
    if check(metrics_addr is not None, "the DaemonSet's serve has no --metrics"):
        metrics_port = int(metrics_addr.rsplit(":", 1)[1])
        probe = daemon.get("readinessProbe", {}).get("httpGet", {})
        check(probe.get("path") == "/metrics", "the readiness probe does not GET /metrics")
        check(container_port(daemon, probe.get("port")) == metrics_port, f"the readiness probe's port is not --metrics' {metrics_port}")
        check(container_port(daemon, "metrics") == metrics_port, f"the metrics container port is not --metrics' {metrics_port}")
        check(flag(args, "--bind") == "0.0.0.0" and metrics_addr.startswith("0.0.0.0:"), "serve does not listen on the pod's addresses")

    # The ServiceMonitor scrapes the Service's metrics port in its namespace.
    check(subset(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]), "the ServiceMonitor does not select the Service")
    check(ns in sm["spec"].get("namespaceSelector", {}).get("matchNames", [ns]), f"the ServiceMonitor does not look in {ns}")
    for e in sm["spec"]["endpoints"]:
        p = svc_ports.get(e.get("port"))
        target = container_port(daemon, p.get("targetPort", p["port"])) if p else None
        check(target is not None and target == metrics_port, f"ServiceMonitor endpoint port {e.get('port')} is not the Service's metrics port")
        check(e.get("path", "/metrics") == "/metrics", "the ServiceMonitor scrapes another path than /metrics")

    # The Job: --hosts is the Service's DNS name; its results go to the PVC.
    jpod = job["spec"]["template"]["spec"]
    mesh = one_container(jpod, "Job")
    jargs = mesh["args"]
    check(jargs[0] == "mesh", f"the Job runs `{jargs[0]}`, not `mesh`")
    dns = f"{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc.cluster.local"
    check(flag(jargs, "--hosts") == dns, f"the Job's --hosts {flag(jargs, '--hosts')} is not the Service's name {dns}")
    out = flag(jargs, "-o")
    om = mounted_volume(mesh, out) if out else None
    check(om is not None and not om[2], f"the Job's -o {out} is not a writable mount")
    if om:
        claim = {v["name"]: v for v in jpod["volumes"]}[om[0]].get("persistentVolumeClaim", {}).get("claimName")
        check(claim == pvc["metadata"]["name"], f"the Job's results volume is not the claim {pvc['metadata']['name']}")

    # Keys: the daemon's --auth-keys and the Job's --auth-key-file come from the one Secret.
    auth_id = flag(jargs, "--auth")
    secret_words = next(iter(secret.get("stringData", {}).values()), "").split()
    check(auth_id is not None and secret_words[:1] == [auth_id], f"the Secret's key line is not for the Job's --auth {auth_id}")
    check_key_chain("DaemonSet --auth-keys", pod, daemon, flag(args, "--auth-keys"), secret)
    check_key_chain("Job --auth-key-file", jpod, mesh, flag(jargs, "--auth-key-file"), secret)

    # Writable paths under a read-only root file system.
    records = flag(args, "--records")
    rm = mounted_volume(daemon, records) if records else None
    check(records is None or (rm is not None and not rm[2]), f"serve --records {records} is not on a writable volume")

    # The image: what the Dockerfile builds, run as its user through its ENTRYPOINT.
    version = workspace_version()
    for what, p in (("DaemonSet", pod), ("Job", jpod)):
        check_pod_security(what, p, docker["uid"])
        for c in p.get("initContainers", []) + p["containers"]:
            check(c["image"] == f"wirebench:{version}", f"{what} container {c['name']}: image {c['image']} is not wirebench:{version}")
        for c in p["containers"]:
            check("command" not in c, f"{what} container {c['name']} overrides the ENTRYPOINT")
        if p.get("initContainers"):
            check(docker["runtime_base"] in BASES_WITH_INSTALL, f"{what}: the init containers run `install`, absent from {docker['runtime_base']}")
    return [args, jargs]


def one_container(pod, what):
    if len(pod["containers"]) != 1:
        raise SystemExit(f"FAIL the {what} pod has {len(pod['containers'])} containers, expected 1")
    return pod["containers"][0]


def rust_default_port():
    text = (REPO / "crates/wirebench-net/src/lib.rs").read_text()
    line = next(l for l in text.splitlines() if l.startswith("pub const DEFAULT_PORT: u16 = "))
    return int(line.rsplit("=", 1)[1].strip(" ;"))


def workspace_version():
    in_pkg = False
    for line in (REPO / "Cargo.toml").read_text().splitlines():
        if line.startswith("["):
            in_pkg = line.strip() == "[workspace.package]"
        elif in_pkg and line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit("FAIL no [workspace.package] version in Cargo.toml")


def parse_dockerfile(text):
    """The Dockerfile's instructions as (INSTRUCTION, argument text), continuations joined."""
    instructions, pending = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        instructions.append((word.upper(), rest.strip()))
    return instructions


def check_dockerfile(text):
    ins = parse_dockerfile(text)
    froms = [i for i, (w, _) in enumerate(ins) if w == "FROM"]
    check(len(froms) >= 2, "the Dockerfile is not multi-stage")
    first = ins[froms[0]][1].split()
    check(first == ["rust:1-bookworm", "AS", "build"], f"the build stage is not `rust:1-bookworm AS build`: {first}")
    runtime = ins[froms[-1]:]
    build = ins[froms[0]:froms[-1]]
    workdir = next((a for w, a in build if w == "WORKDIR"), "/")
    runs = [shlex.split(a) for w, a in build if w == "RUN"]
    cmd = ["cargo", "build", "--release", "--locked", "-p", "wirebench"]
    check(cmd in runs, f"the build stage does not run `{' '.join(cmd)}`: {runs}")
    copies = [a.split() for w, a in runtime if w == "COPY"]
    want_copy = ["--from=build", f"{workdir.rstrip('/')}/target/release/wirebench", "/usr/local/bin/wirebench"]
    check(copies == [want_copy], f"the runtime stage copies other than the binary: {copies}")
    check(not any(w == "RUN" for w, _ in runtime), "the runtime stage runs commands (it holds the binary only)")
    user = [a for w, a in runtime if w == "USER"]
    uid = None
    if check(len(user) == 1, "the runtime stage has no USER"):
        uid_text = user[0].split(":")[0]
        check(uid_text.isdigit() and int(uid_text) != 0, f"USER {user[0]} is not a numeric non-root UID (runAsNonRoot needs one)")
        uid = int(uid_text) if uid_text.isdigit() else None
    entry = [a for w, a in runtime if w == "ENTRYPOINT"]
    check(len(entry) == 1 and json.loads(entry[0]) == ["/usr/local/bin/wirebench"], f"ENTRYPOINT is not [\"/usr/local/bin/wirebench\"]: {entry}")
    ignore = (REPO / ".dockerignore").read_text().split()
    check("target" in ignore and ".git" in ignore, ".dockerignore does not leave out target and .git")
    return {"uid": uid, "runtime_base": ins[froms[-1]][1].split()[0]}


def check_cargo_command():
    """What the Dockerfile's `cargo build --release --locked -p wirebench` relies on: the lock
    file is current (--locked), and package wirebench has the binary target wirebench."""
    r = subprocess.run(
        # Not --no-deps: resolving the dependencies is what --locked checks against Cargo.lock.
        ["cargo", "metadata", "--locked", "--format-version", "1"],
        cwd=REPO, capture_output=True, text=True,
    )
    if not check(r.returncode == 0, f"cargo metadata --locked failed (Cargo.lock not current?): {r.stderr.strip()}"):
        return
    meta = json.loads(r.stdout)
    members = set(meta["workspace_members"])
    bins = [
        t["name"]
        for p in meta["packages"]
        if p["name"] == "wirebench" and p["id"] in members
        for t in p["targets"]
        if "bin" in t["kind"]
    ]
    check(bins == ["wirebench"], f"package wirebench's binaries are {bins}, not [wirebench]")


def check_args_parse(binary, commands):
    """Each container's arguments parse with `binary` (a trailing `--help` stops clap after it
    has read them; a test after `--` is checked as its own command line)."""
    for args in commands:
        lines = [args]
        if "--" in args:
            cut = args.index("--")
            lines = [args[:cut], args[cut + 1 :]]
        for argv in lines:
            r = subprocess.run([binary] + argv + ["--help"], capture_output=True, text=True)
            err = r.stderr.strip() or json_error(r.stdout)
            if check(r.returncode == 0, f"`wirebench {' '.join(argv)}` does not parse: {err}"):
                print(f"ok   `wirebench {' '.join(argv)}` parses")


def json_error(stdout):
    """The message of a --json run's error document (the error is printed there, not on stderr)."""
    try:
        return json.loads(stdout)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return stdout.strip()[:300]


def check_all(docs, dockerfile_text):
    """Every check but the cargo and binary ones; the containers' command lines."""
    validate_schemas(docs)
    docker = check_dockerfile(dockerfile_text)
    return check_consistency(docs, docker)


def doc_of(docs, kind):
    return next(d for _, d in docs if d["kind"] == kind)


def daemon_of(docs):
    return doc_of(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]


def set_flag(docs, kind, name, value):
    args = doc_of(docs, kind)["spec"]["template"]["spec"]["containers"][0]["args"]
    args[args.index(name) + 1] = value


# Breakages the checks must catch: (what, change to the manifests, change to the Dockerfile).
BREAKAGES = [
    ("a misspelt container field", lambda d: daemon_of(d).update(readinesProbe=daemon_of(d).pop("readinessProbe")), None),
    ("a string for an integer", lambda d: doc_of(d, "Service")["spec"]["ports"][0].update(port="5301"), None),
    ("an API version with no schema", lambda d: doc_of(d, "Secret").update(apiVersion="v2"), None),
    ("a ServiceMonitor field the CRD lacks", lambda d: doc_of(d, "ServiceMonitor")["spec"]["endpoints"][0].update(pathh="/"), None),
    ("a malformed scrape interval", lambda d: doc_of(d, "ServiceMonitor")["spec"]["endpoints"][0].update(interval="30 seconds"), None),
    ("a malformed memory quantity", lambda d: daemon_of(d)["resources"]["requests"].update(memory="64 Mi"), None),
    ("the metrics port moved", lambda d: set_flag(d, "DaemonSet", "--metrics", "0.0.0.0:9465"), None),
    ("the Service selecting other pods", lambda d: doc_of(d, "Service")["spec"]["selector"].update(app="x"), None),
    ("--hosts in another namespace", lambda d: set_flag(d, "Job", "--hosts", "wirebench.default.svc.cluster.local"), None),
    ("the key read from elsewhere", lambda d: set_flag(d, "DaemonSet", "--auth-keys", "/etc/wirebench/secret/key"), None),
    ("the key copied group-readable", lambda d: doc_of(d, "Job")["spec"]["template"]["spec"]["initContainers"][0]["command"].__setitem__(2, "0440"), None),
    ("a writable root file system", lambda d: daemon_of(d)["securityContext"].update(readOnlyRootFilesystem=False), None),
    ("the image running as root", None, lambda t: t.replace("USER 10001:10001", "USER 0")),
    ("another ENTRYPOINT", None, lambda t: t.replace('ENTRYPOINT ["/usr/local/bin/wirebench"]', 'ENTRYPOINT ["/bin/wirebench"]')),
    ("a single-stage image", None, lambda t: t.replace("FROM debian:bookworm-slim", "")),
]


def self_test(docs, dockerfile_text):
    """Each breakage in BREAKAGES must fail a check (the unchanged files are checked before)."""
    global quiet
    missed = []
    for what, change_docs, change_dockerfile in BREAKAGES:
        d, t = copy.deepcopy(docs), dockerfile_text
        if change_docs:
            change_docs(d)
        if change_dockerfile:
            t = change_dockerfile(t)
        failures.clear()
        quiet = True
        try:
            with open(os.devnull, "w") as devnull:
                stdout, sys.stdout = sys.stdout, devnull
                try:
                    check_all(d, t)
                finally:
                    sys.stdout = stdout
        except SystemExit as e:  # a missing object ends the checks early: also a failure
            failures.append(str(e))
        finally:
            quiet = False
        print(f"{'ok  ' if failures else 'MISS'} breakage caught: {what} ({len(failures)} failures)")
        if not failures:
            missed.append(what)
    failures.clear()
    for m in missed:
        fail(f"self-test: the checks pass with {m}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", help="a wirebench binary to parse the containers' arguments with")
    ap.add_argument("--self-test", action="store_true", help="also check that known breakages fail")
    opts = ap.parse_args()
    docs = load_manifests()
    dockerfile_text = (REPO / "Dockerfile").read_text()
    commands = check_all(docs, dockerfile_text)
    check_cargo_command()
    if opts.binary:
        check_args_parse(opts.binary, commands)
    if opts.self_test:
        found = list(failures)
        self_test(docs, dockerfile_text)
        failures[:0] = found
    if failures:
        print(f"deploy/k8s: {len(failures)} check(s) failed")
        return 1
    print(f"deploy/k8s: {len(docs)} manifests, the Dockerfile and their consistency checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
