"""Checks `torchbench --torchbench_list_models=json`: valid JSON, one object
per model with the documented fields, counts present and positive where a
model has parameters."""
import json
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--torchbench_list_models=json"],
                     check=True, capture_output=True, text=True).stdout
models = json.loads(out)
assert isinstance(models, list) and models, "expected a non-empty list"
names = [m["name"] for m in models]
assert names == sorted(names), "models must be listed sorted by name"
for m in models:
    for key in ("name", "domain", "task", "modes", "parameters", "buffers"):
        assert key in m, f"{m.get('name')}: missing {key}"
    assert "error" not in m, f"{m['name']}: {m['error']}"
    assert set(m["modes"]) <= {"Train", "Eval"} and m["modes"], m["name"]
by_name = {m["name"]: m for m in models}
# torchvision 0.29.1: sum(p.numel() for p in resnet50().parameters())
if "resnet50" in by_name:
    assert by_name["resnet50"]["parameters"] == 25557032, by_name["resnet50"]
print(f"{len(models)} models listed: {', '.join(names)}")
