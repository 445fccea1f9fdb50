#!/usr/bin/python3
"""Checks manifests/: every kustomization renders, every object fits its schema, every flag exists.

Run by ctest (tests/manifests/CMakeLists.txt):

  manifests_test.py --manifests DIR --binary kubestat-aggregator=PATH ... [--kubectl PATH ...]

1. Renders manifests/base, every manifests/overlays/*, and the overlays gen-certs.sh writes
   (on the base and on overlays/metrics-server, in a temporary directory) with `kubectl
   kustomize`, once per kubectl (--kubectl, $KUBESTAT_KUBECTLS, `kubectl` on PATH): Debian 12's
   kubectl 1.20 (kustomize v2.0.3) and a current one read the same files. Exit code 77 (a
   skip) when there is no kubectl.
2. Validates every rendered object against the Kubernetes OpenAPI schemas that Debian's
   python3-kubernetes ships as its generated model classes (openapi_types, attribute_map):
   an unknown field or a value of the wrong type (str, int, bool, list, dict, nested model)
   fails. For kinds the package lacks (monitoring.coreos.com ServiceMonitor, cert-manager.io
   Certificate and Issuer) the schemas in CRD_MODELS below are written from the fields their
   CRDs document, in the same notation. A self-test first proves the validator rejects a
   misspelled field and a mistyped value.
3. Every --flag in the command and args of every container running a kubestat image exists
   in that binary's --help. Containers of other images (etcd) are not checked: their flags
   are not ours.
Also checks that gen-certs.sh's certificates verify (`openssl verify`) for the Service names.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

try:
    import kubernetes.client as k8s_models
    import yaml
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"SKIP: {e} (install Debian's python3-kubernetes and python3-yaml)")
    sys.exit(SKIP)

# Schemas of the custom resources the manifests use, from their CRDs' documented fields
# (monitoring.coreos.com/v1 of the Prometheus Operator; cert-manager.io/v1). Only the fields
# an operator may set are listed; `object` marks a free-form or unchecked subtree.
CRD_MODELS = {
    "MonitoringCoreosComV1ServiceMonitor": {
        "apiVersion": "str", "kind": "str", "metadata": "V1ObjectMeta",
        "spec": "ServiceMonitorSpec",
    },
    "ServiceMonitorSpec": {
        "jobLabel": "str", "targetLabels": "list[str]", "podTargetLabels": "list[str]",
        "endpoints": "list[ServiceMonitorEndpoint]", "selector": "V1LabelSelector",
        "namespaceSelector": "ServiceMonitorNamespaceSelector", "sampleLimit": "int",
        "targetLimit": "int", "labelLimit": "int", "labelNameLengthLimit": "int",
        "labelValueLengthLimit": "int", "keepDroppedTargets": "int",
        "scrapeProtocols": "list[str]", "attachMetadata": "object",
        "scrapeClass": "str", "bodySizeLimit": "str",
    },
    "ServiceMonitorNamespaceSelector": {"any": "bool", "matchNames": "list[str]"},
    "ServiceMonitorEndpoint": {
        "port": "str", "targetPort": "object", "path": "str", "scheme": "str",
        "params": "dict(str, list[str])", "interval": "str", "scrapeTimeout": "str",
        "tlsConfig": "ServiceMonitorTLSConfig", "bearerTokenFile": "str",
        "bearerTokenSecret": "V1SecretKeySelector", "authorization": "ServiceMonitorAuthorization",
        "honorLabels": "bool", "honorTimestamps": "bool", "trackTimestampsStaleness": "bool",
        "basicAuth": "object", "oauth2": "object", "metricRelabelings": "list[object]",
        "relabelings": "list[object]", "proxyUrl": "str", "followRedirects": "bool",
        "enableHttp2": "bool", "filterRunning": "bool",
    },
    "ServiceMonitorAuthorization": {"type": "str", "credentials": "V1SecretKeySelector"},
    "ServiceMonitorTLSConfig": {
        "ca": "ServiceMonitorSecretOrConfigMap", "cert": "ServiceMonitorSecretOrConfigMap",
        "keySecret": "V1SecretKeySelector", "caFile": "str", "certFile": "str",
        "keyFile": "str", "serverName": "str", "insecureSkipVerify": "bool",
    },
    "ServiceMonitorSecretOrConfigMap": {
        "secret": "V1SecretKeySelector", "configMap": "V1ConfigMapKeySelector",
    },
    "CertManagerIoV1Certificate": {
        "apiVersion": "str", "kind": "str", "metadata": "V1ObjectMeta",
        "spec": "CertificateSpec",
    },
    "CertificateSpec": {
        "secretName": "str", "commonName": "str", "dnsNames": "list[str]",
        "ipAddresses": "list[str]", "uris": "list[str]", "emailAddresses": "list[str]",
        "duration": "str", "renewBefore": "str", "usages": "list[str]", "isCA": "bool",
        "privateKey": "CertificatePrivateKey", "issuerRef": "CertificateIssuerRef",
        "subject": "object", "literalSubject": "str", "secretTemplate": "object",
        "keystores": "object", "revisionHistoryLimit": "int",
        "additionalOutputFormats": "list[object]", "nameConstraints": "object",
        "otherNames": "list[object]", "encodeUsagesInRequest": "bool",
    },
    "CertificatePrivateKey": {
        "algorithm": "str", "size": "int", "encoding": "str", "rotationPolicy": "str",
    },
    "CertificateIssuerRef": {"name": "str", "kind": "str", "group": "str"},
    "CertManagerIoV1Issuer": {
        "apiVersion": "str", "kind": "str", "metadata": "V1ObjectMeta", "spec": "IssuerSpec",
    },
    "IssuerSpec": {
        "selfSigned": "IssuerSelfSigned", "ca": "IssuerCA", "acme": "object",
        "vault": "object", "venafi": "object",
    },
    "IssuerSelfSigned": {"crlDistributionPoints": "list[str]"},
    "IssuerCA": {
        "secretName": "str", "crlDistributionPoints": "list[str]", "ocspServers": "list[str]",
        "issuingCertificateURL": "list[str]",
    },
}

# The custom kinds: (apiVersion, kind) -> the top model in CRD_MODELS.
CRD_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "MonitoringCoreosComV1ServiceMonitor",
    ("cert-manager.io/v1", "Certificate"): "CertManagerIoV1Certificate",
    ("cert-manager.io/v1", "Issuer"): "CertManagerIoV1Issuer",
}

# Quantities are typed `str` in the generated models, and Kubernetes also takes a number.
QUANTITY_MAPS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests")}


def fields_of(model):
    """{json field name: type} of a model: a CRD schema above or a generated class."""
    if model in CRD_MODELS:
        return CRD_MODELS[model]
    cls = getattr(k8s_models, model, None)
    if cls is None or not hasattr(cls, "openapi_types"):
        return None
    return {cls.attribute_map[attr]: t for attr, t in cls.openapi_types.items()}


def model_of(obj):
    """The model name for an object's apiVersion and kind, or None when unknown."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if (api_version, kind) in CRD_KINDS:
        return CRD_KINDS[(api_version, kind)]
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    version = api_version.split("/")[-1]
    name = version[0].upper() + version[1:] + kind
    return name if fields_of(name) is not None else None


def type_name(value):
    return type(value).__name__


def check(value, typ, path, errors, quantity=False):
    """Appends to `errors` every way `value` does not fit the type string `typ`."""
    if value is None:
        return  # an explicit null is an unset field
    if typ == "object":
        return
    m = re.fullmatch(r"list\[(.+)\]", typ)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list ({typ}), got {type_name(value)}")
            return
        for i, item in enumerate(value):
            check(item, m.group(1), f"{path}[{i}]", errors)
        return
    m = re.fullmatch(r"dict\(str, (.+)\)", typ)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected a map ({typ}), got {type_name(value)}")
            return
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{path}: key {k!r} is not a string")
            check(v, m.group(1), f"{path}.{k}", errors, quantity)
        return
    if typ in ("str", "datetime", "date"):
        if isinstance(value, str):
            return
        if quantity and isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        errors.append(f"{path}: expected a string, got {type_name(value)} {value!r}")
        return
    if typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{path}: expected an integer, got {type_name(value)} {value!r}")
        return
    if typ == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            errors.append(f"{path}: expected a number, got {type_name(value)} {value!r}")
        return
    if typ == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected a boolean, got {type_name(value)} {value!r}")
        return
    fields = fields_of(typ)
    if fields is None:
        errors.append(f"{path}: no schema for type {typ}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({typ}), got {type_name(value)}")
        return
    for k, v in value.items():
        if k not in fields:
            errors.append(f"{path}.{k}: unknown field of {typ}")
            continue
        check(v, fields[k], f"{path}.{k}", errors, (typ, k) in QUANTITY_MAPS)


def validate(obj):
    """Every schema error of one rendered object (a list; empty when it fits)."""
    model = model_of(obj)
    name = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
    if model is None:
        return [f"{name}: no schema for apiVersion {obj.get('apiVersion')} kind {obj.get('kind')}"]
    errors = []
    check(obj, model, name, errors)
    return errors


def self_test():
    """The validator must reject what the API server would: else this test proves nothing."""
    good = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "replicas": 2, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{
                "name": "c", "image": "i", "ports": [{"containerPort": 1}],
                "resources": {"limits": {"cpu": 2, "memory": "1Gi"}}}]}},
        },
    }
    assert validate(good) == [], validate(good)

    def broken(edit):
        obj = yaml.safe_load(yaml.safe_dump(good))
        edit(obj)
        return validate(obj)

    cases = {
        "misspelled field (replica)": lambda o: o["spec"].update(replica=2),
        'replicas: "2"': lambda o: o["spec"].update(replicas="2"),
        "containers not a list": lambda o: o["spec"]["template"]["spec"].update(
            containers={"name": "c"}),
        "unknown container field": lambda o: o["spec"]["template"]["spec"]["containers"][0]
        .update(imagePullPolicyy="Always"),
        "label value not a string": lambda o: o["metadata"].update(labels={"a": 1}),
        "bool as string": lambda o: o["spec"].update(paused="true"),
        "port as string": lambda o: o["spec"]["template"]["spec"]["containers"][0]["ports"][0]
        .update(containerPort="1"),
    }
    for what, edit in cases.items():
        if not broken(edit):
            raise AssertionError(f"validator self-test: a Deployment with {what} was accepted")
    monitor = {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
               "metadata": {"name": "m"}, "spec": {"endpoints": [{"port": "https", "intervall": "1s"}]}}
    if not validate(monitor):
        raise AssertionError("validator self-test: a ServiceMonitor with a misspelled field was accepted")
    unknown = {"apiVersion": "example.com/v1", "kind": "Nothing", "metadata": {"name": "x"}}
    if not validate(unknown):
        raise AssertionError("validator self-test: an unknown kind was accepted")
    print(f"validator self-test: {len(cases) + 2} broken objects rejected")


def help_flags(binary):
    """The flags a kubestat binary's --help lists (with the --no-X form of booleans)."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    flags = set(re.findall(r"^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)", text, re.M))
    flags |= set(re.findall(r"Negate with --(no-[a-z0-9-]+)", text))
    if not flags:
        raise RuntimeError(f"{binary} --help listed no flags:\n{text}")
    return flags


def pod_specs(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        yield spec
    template = spec.get("template") or {}
    if "spec" in template:
        yield template["spec"]
    job = (spec.get("jobTemplate") or {}).get("spec", {}).get("template", {})
    if "spec" in job:
        yield job["spec"]


def check_flags(obj, binaries, helps, errors, skipped):
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    for spec in pod_specs(obj):
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            image = c.get("image", "")
            binary = re.sub(r"[:@].*$", "", image.rsplit("/", 1)[-1])
            if not binary.startswith("kubestat-"):
                skipped.add(image)
                continue
            if binary not in binaries:
                errors.append(f"{name} container {c['name']}: no binary given for image {image}")
                continue
            if binary not in helps:
                helps[binary] = help_flags(binaries[binary])
            for arg in (c.get("command") or [])[1:] + (c.get("args") or []):
                if not isinstance(arg, str) or not arg.startswith("--"):
                    continue
                flag = arg[2:].split("=", 1)[0]
                if flag not in helps[binary]:
                    errors.append(f"{name} container {c['name']}: {binary} has no flag --{flag}")


def render(kubectl, directory):
    out = subprocess.run([kubectl, "kustomize", directory], capture_output=True, text=True,
                         timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"{kubectl} kustomize {directory} failed:\n{out.stderr}")
    return [o for o in yaml.safe_load_all(out.stdout) if o]


def gen_certs(manifests, work, overlay):
    """Runs gen-certs.sh on `overlay`; returns its output directory, certificates verified."""
    out = os.path.join(work, "certs-" + os.path.basename(overlay))
    subprocess.run([os.path.join(manifests, "gen-certs.sh"), "-b", overlay, out],
                   check=True, capture_output=True, text=True)
    for name, svc in (("aggregator", "kubestat-aggregator"), ("apiserver", "kubestat-apiserver")):
        for dns in (svc, f"{svc}.kubestat", f"{svc}.kubestat.svc",
                    f"{svc}.kubestat.svc.cluster.local"):
            v = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(out, "ca.crt"),
                                "-purpose", "sslserver", "-verify_hostname", dns,
                                os.path.join(out, f"{name}.crt")], capture_output=True, text=True)
            if v.returncode != 0:
                raise AssertionError(f"gen-certs.sh: {name}.crt does not verify for {dns}: {v.stdout}{v.stderr}")
        wrong = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(out, "ca.crt"),
                                "-verify_hostname", "kubestat-other.kubestat.svc",
                                os.path.join(out, f"{name}.crt")], capture_output=True)
        if wrong.returncode == 0:
            raise AssertionError(f"gen-certs.sh: {name}.crt verifies for a name it does not hold")
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--manifests", required=True)
    parser.add_argument("--binary", action="append", default=[], help="name=path")
    parser.add_argument("--kubectl", action="append", default=[])
    args = parser.parse_args()

    self_test()

    # Each kubectl given, those in $KUBESTAT_KUBECTLS (colon-separated: another version to
    # check with), and the one on PATH.
    kubectls = []
    for k in args.kubectl + os.environ.get("KUBESTAT_KUBECTLS", "").split(":") + ["kubectl"]:
        found = shutil.which(k) if k else None
        if found and os.path.realpath(found) not in map(os.path.realpath, kubectls):
            kubectls.append(found)
    if not kubectls:
        print("SKIP: kubectl is not installed (Debian's kubernetes-client; scripts/install-deps.sh)")
        return SKIP
    binaries = dict(b.split("=", 1) for b in args.binary)
    manifests = os.path.abspath(args.manifests)
    overlays = [os.path.join(manifests, "base")] + sorted(
        os.path.join(manifests, "overlays", d) for d in os.listdir(os.path.join(manifests, "overlays")))

    failures = []
    helps, skipped = {}, set()
    with tempfile.TemporaryDirectory() as work:
        if shutil.which("openssl"):
            # gen-certs.sh over every layout, as an operator may pick any of them.
            targets = overlays + [gen_certs(manifests, work, overlay) for overlay in overlays]
        else:
            print("note: openssl is not installed; gen-certs.sh not run")
            targets = overlays
        for kubectl in kubectls:
            for directory in targets:
                label = f"{os.path.relpath(directory, manifests) if directory.startswith(manifests) else os.path.basename(directory)} ({kubectl})"
                try:
                    objects = render(kubectl, directory)
                except RuntimeError as e:
                    failures.append(str(e))
                    continue
                errors = []
                for obj in objects:
                    errors += validate(obj)
                    check_flags(obj, binaries, helps, errors, skipped)
                if "certs-" in directory:
                    bundles = [o["spec"].get("caBundle", "") for o in objects if o["kind"] == "APIService"]
                    if not bundles or any(not b.startswith("LS0t") for b in bundles):
                        errors.append("gen-certs.sh's overlay left an APIService without its caBundle")
                print(f"{label}: {len(objects)} objects, {len(errors)} errors")
                failures += [f"{label}: {e}" for e in errors]
    if skipped:
        print(f"flags not checked (not kubestat binaries): {', '.join(sorted(skipped))}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
