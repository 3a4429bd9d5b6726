"""echo-py: the Python twin of gen/plugin/testdata/echo.

A plugin written against the plugin contract alone (docs/plugins.md): it
reads an emqgen.plugin.request/v1 on stdin and writes an
emqgen.plugin.response/v1 on stdout with the same files, byte for byte, as
the Go echo plugin in its default mode. gen/plugin's tests run both and
compare.
"""

import json
import sys

REQUEST = "emqgen.plugin.request/v1"
RESPONSE = "emqgen.plugin.response/v1"


def go_quote(s: str) -> str:
    """Quotes s as Go's %q does for the ASCII text this plugin emits."""
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            raise ValueError(f"non-ASCII text {s!r} is out of this example's scope")
    out.append('"')
    return "".join(out)


def render(req: dict) -> list:
    h = req["emqgen"]["header"]
    p = req["protocol"]
    module = req["options"].get("module") or "constants"
    b = [
        f"# {h['marker']}\n# Source: {h['source']}. Regenerate: {h['regenerate']}.\n",
        f"\"\"\"The {p['name']} protocol's constants.\"\"\"\n\n",
        f"PROTOCOL = {go_quote(p['name'])}\nVERSION = {go_quote(p['version']['text'])}\n",
        f"VERSION_RECORD = {go_quote(p['version_record'])}\nBUNDLE_DIGEST = {go_quote(req['bundle']['digest'])}\n\n",
        "SCRIPT_SHA1 = {\n",
    ]
    for s in req["bundle"]["scripts"]:
        b.append(f"    {go_quote(s['name'])}: {go_quote(s['sha1'])},\n")
    b.append("}\n\nSCRIPT_KEYS = {\n")
    for s in p["scripts"]:
        keys = ", ".join(go_quote(k["shape"]) for k in s["keys"])
        b.append(f"    {go_quote(s['name'])}: [{keys}],\n")
    b.append("}\n")
    words = [f"# {h['marker']}\n"] + [f"{c['word']} {c['name']}\n" for c in p["classes"]]
    return [
        {"path": module + ".py", "content": "".join(b)},
        {"path": "classes/words.txt", "content": "".join(words)},
    ]


def main() -> int:
    req = json.load(sys.stdin)
    if req.get("schema") != REQUEST:
        print(f"echo-py: request schema {req.get('schema')!r} is not one this plugin reads", file=sys.stderr)
        return 2
    json.dump({"schema": RESPONSE, "files": render(req)}, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
