"""Kubernetes: the same profile as a LeaderWorkerSet (`deploy export k8s`), and a diagnosis of
a group's pods and events (`deploy logs --classify --input pods.json`).

- `manifests.build(spec)`: plain dicts, one per object (LeaderWorkerSet, Service, and with
  replicas > 1 the router's ServiceAccount, Role, RoleBinding, Deployment and Service).
  The server's arguments are `Spec.server_argv()`, the vector the systemd unit runs.
- `yamlout.dump(objects)`: deterministic YAML (PyYAML, key order as built).
- `validate`: the closed LWS schema derived from the CRDs (`schemas/`, by
  scripts/gen_lws_schema.py), LWS's admission-webhook rules, and an optional server dry run.
- `pods.diagnose(text)`: `kubectl get pod -o json` / `kubectl get events -o json` to a
  diagnosis of the same shape the log classifier returns.
"""
