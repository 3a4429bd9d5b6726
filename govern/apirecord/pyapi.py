"""Prints the public API of a Python package, one feature per line, for
emqgen's governance (govern/apirecord, PyAPI): the Python counterpart of the
Go and TypeScript API records.

    python3 pyapi.py PACKAGE_DIR        (e.g. sdk/python/src/echomq)

It reads the package's sources with the standard library's ast module and
imports nothing (the package's dependencies need not be installed; no code
of the package runs). The public modules are the package and every module
or subpackage under it whose dotted name has no component starting with an
underscore. A module's public names follow the typing specification's rules
for a py.typed library: its __all__ when it has one (list or tuple literals,
joined with + or +=, and the __all__ of a module it star-imports); otherwise
every name it defines (def, class, assignment) that does not start with an
underscore, and every name it imports as itself (`from x import A as A`,
`import a as a`, `from . import sub`) or star-imports. A re-exported name is
recorded as its definition, found by following the package's own relative
imports; a name from outside the package is an alias of its origin. Each
public name gives its lines:

    <module> function <name>: [async ](<params>) -> <return>
    <module> class <name>: [@<decorator> ...]class[(<bases>)]
    <module> class <name> constructor: (<params>) -> None
    <module> class <name> method|staticmethod|classmethod <m>: [async ](<params>) -> <return>
    <module> class <name> property <p>: [readonly ]<type>
    <module> class <name> attribute <a>: <type>[ = ...]   (declared in the class
                                                       body, or set on self by __init__)
    <module> class <name> member <m>: <value>          (an Enum's members)
    <module> const <name>: <type>
    <module> type <name>: = <expression>               (a type alias)
    <module> type <name>: = Literal                    (an alias of literals, with
    <module> type <name> member <literal>: literal      one member line per literal)
    <module> alias <name>: <origin>                    (a name from elsewhere)
    <module> module <name>: module                     (a public submodule)

A signature lists each parameter with its name (Python callers may pass any
parameter by keyword), its annotation as written and "= ..." when it has a
default (a default's value is no part of the API), with "/" and "*" where
the definition has them; a method's first parameter (self, cls) is left
out. An @overload gives one line per overload. Annotations are the source
text, whitespace normalised by ast.unparse, string annotations (forward
references) unquoted wherever they are, Literal[...] arguments kept.
A constant of a literal value is recorded with the literal's type (a new
version string is no change of the API). Everything before the first ": "
is the feature's key: a line gone whose key remains has changed its type or
signature. Lines are printed sorted and unique. Exit 1 with a message on a
syntax error or a name in __all__ that the module does not define.
"""

import ast
import copy
import os
import sys


def fail(msg):
    sys.stderr.write("pyapi.py: " + msg + "\n")
    sys.exit(1)


class Module:
    def __init__(self, name, path, is_pkg):
        self.name = name
        self.path = path
        self.is_pkg = is_pkg
        with open(path, "rb") as f:
            src = f.read()
        try:
            self.tree = ast.parse(src, filename=path)
        except SyntaxError as e:
            fail("%s:%s: %s" % (path, e.lineno, e.msg))
        self.defs = {}  # name -> AST node (FunctionDef, ClassDef, Assign, AnnAssign), overloads as a list
        self.imports = {}  # name -> (module, name or None for a module, explicit re-export)
        self.stars = []  # star-imported modules
        self.all = None
        for node in self.statements(self.tree.body):
            self.collect(node)

    def statements(self, body):
        # if TYPE_CHECKING:, try: and if/else blocks at module level define names too
        for node in body:
            if isinstance(node, ast.If):
                yield from self.statements(node.body)
                yield from self.statements(node.orelse)
            elif isinstance(node, ast.Try):
                yield from self.statements(node.body)
                for h in node.handlers:
                    yield from self.statements(h.body)
                yield from self.statements(node.orelse)
                yield from self.statements(node.finalbody)
            else:
                yield node

    def resolve(self, level, module):
        if level == 0:
            return module
        parts = self.name.split(".")
        if not self.is_pkg:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        return base + "." + module if module else base

    def collect(self, node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if has_decorator(node, "overload"):
                prev = self.defs.get(node.name)
                self.defs[node.name] = (prev if isinstance(prev, list) else []) + [node]
            elif not isinstance(self.defs.get(node.name), list):
                self.defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            self.defs[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    if t.id == "__all__":
                        self.all = names_of(self, node.value)
                    else:
                        self.defs[t.id] = node
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__":
            self.all = (self.all or []) + names_of(self, node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == "__all__" and node.value is not None:
                self.all = names_of(self, node.value)
            else:
                self.defs[node.target.id] = node
        elif isinstance(node, ast.ImportFrom):
            src = self.resolve(node.level, node.module)
            for a in node.names:
                if a.name == "*":
                    self.stars.append(src)
                    continue
                name = a.asname or a.name
                explicit = a.asname == a.name or (node.level > 0 and node.module is None)
                self.imports[name] = (src, a.name, explicit)
        elif isinstance(node, ast.Import):
            for a in node.names:
                name = a.asname or a.name.split(".")[0]
                self.imports[name] = (a.name if a.asname else name, None, a.asname == a.name)


def names_of(mod, value):
    if isinstance(value, (ast.List, ast.Tuple)):
        out = []
        for e in value.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, str):
                out.append(e.value)
            elif isinstance(e, ast.Starred):
                out += names_of(mod, e.value)
            else:
                fail("%s: __all__ holds %s, not a string" % (mod.path, ast.unparse(e)))
        return out
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return names_of(mod, value.left) + names_of(mod, value.right)
    if isinstance(value, ast.Attribute) and value.attr == "__all__" and isinstance(value.value, ast.Name):
        imp = mod.imports.get(value.value.id)
        if imp:
            target = imp[0] + "." + imp[1] if imp[1] else imp[0]
            return [("*all*", target)]
    fail(
        "%s: __all__ is %s: only list or tuple literals, +, and another module's __all__ are read"
        % (mod.path, ast.unparse(value))
    )


def has_decorator(node, name):
    for d in node.decorator_list:
        if isinstance(d, ast.Call):
            d = d.func
        if (isinstance(d, ast.Name) and d.id == name) or (isinstance(d, ast.Attribute) and d.attr == name):
            return True
    return False


def decorator_attr(node, attr):
    for d in node.decorator_list:
        if isinstance(d, ast.Attribute) and d.attr == attr:
            return True
    return False


class Unquote(ast.NodeTransformer):
    """Replaces string annotations (forward references, anywhere in an
    annotation: "Queue", Optional["Queue"]) by the expression they hold,
    leaving Literal[...] arguments as they are."""

    def visit_Subscript(self, node):
        name = ast.unparse(node.value)
        if name.split(".")[-1] == "Literal":
            return node
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            try:
                return self.visit(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                return node
        return node


def ann(node):
    if node is None:
        return None
    return " ".join(ast.unparse(Unquote().visit(copy.deepcopy(node))).split())


def param(a, default):
    s = a.arg
    t = ann(a.annotation)
    if t is not None:
        s += ": " + t
    if default:
        s += " = ..."
    return s


def signature(fn, method):
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [False] * (len(pos) - len(a.defaults)) + [True] * len(a.defaults)
    items = [(p, d, i < len(a.posonlyargs)) for i, (p, d) in enumerate(zip(pos, defaults))]
    if method and items:
        items = items[1:]
    parts = []
    posonly = False
    for p, d, is_posonly in items:
        if posonly and not is_posonly:
            parts.append("/")
            posonly = False
        posonly = posonly or is_posonly
        parts.append(param(p, d))
    if posonly:
        parts.append("/")
    if a.vararg:
        parts.append("*" + param(a.vararg, False))
    elif a.kwonlyargs:
        parts.append("*")
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        parts.append(param(p, d is not None))
    if a.kwarg:
        parts.append("**" + param(a.kwarg, False))
    ret = ann(fn.returns)
    s = "(" + ", ".join(parts) + ")"
    s += " -> " + (ret if ret is not None else "None" if fn.name == "__init__" else "?")
    if isinstance(fn, ast.AsyncFunctionDef):
        s = "async " + s
    return s


LITERAL_TYPES = {
    str: "str",
    bytes: "bytes",
    bool: "bool",
    int: "int",
    float: "float",
    complex: "complex",
    type(None): "None",
}


def value_type(v, defs=None, depth=0):
    """The type of a literal value, or None when v is no literal; a name is
    followed to its module-level definition in defs."""
    if isinstance(v, ast.Name) and defs and depth < 20:
        d = defs.get(v.id)
        if isinstance(d, (ast.Assign, ast.AnnAssign)) and d.value is not None:
            return value_type(d.value, defs, depth + 1)
        return None
    if isinstance(v, ast.Constant) and type(v.value) in LITERAL_TYPES:
        return LITERAL_TYPES[type(v.value)]
    if (
        isinstance(v, ast.UnaryOp)
        and isinstance(v.op, (ast.USub, ast.UAdd))
        and value_type(v.operand) in ("int", "float")
    ):
        return value_type(v.operand)
    if isinstance(v, (ast.Tuple, ast.List, ast.Set)):
        kind = {ast.Tuple: "tuple", ast.List: "list", ast.Set: "set"}[type(v)]
        ts = sorted({value_type(e, defs, depth + 1) or "?" for e in v.elts})
        if not ts:
            return kind
        return "%s[%s%s]" % (kind, " | ".join(ts), ", ..." if kind == "tuple" else "")
    if isinstance(v, ast.Dict):
        ks = sorted({value_type(k, defs, depth + 1) or "?" for k in v.keys if k is not None})
        vs = sorted({value_type(e, defs, depth + 1) or "?" for e in v.values})
        if not ks:
            return "dict"
        return "dict[%s, %s]" % (" | ".join(ks), " | ".join(vs))
    return None


def is_typealias_value(v):
    if isinstance(v, (ast.Name, ast.Attribute)):
        return True
    if isinstance(v, ast.Subscript):
        return True
    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.BitOr):
        return is_typealias_value(v.left) or is_typealias_value(v.right)
    return False


def is_enum(cls):
    for b in cls.bases:
        n = ast.unparse(b)
        if n.split(".")[-1] in ("Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"):
            return True
    return False


def function_lines(key, node, method):
    nodes = node if isinstance(node, list) else [node]
    return [key + ": " + signature(n, method) for n in nodes]


def class_lines(key, cls):
    bases = [ast.unparse(b) for b in cls.bases] + [k.arg + "=" + ast.unparse(k.value) for k in cls.keywords if k.arg]
    decorators = "".join("@" + ast.unparse(d) + " " for d in cls.decorator_list)
    out = [key + ": " + decorators + "class" + ("(" + ", ".join(bases) + ")" if bases else "")]
    enum = is_enum(cls)
    setters = set()
    members = {}
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter"):
                    setters.add(node.name)
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            if decorator_attr(node, "setter") or decorator_attr(node, "deleter"):
                continue
            if has_decorator(node, "property") or has_decorator(node, "cached_property"):
                t = ann(node.returns) or "?"
                out.append("%s property %s: %s%s" % (key, name, "" if name in setters else "readonly ", t))
                continue
            if name == "__init__":
                kind = "constructor"
                k = key + " constructor"
            else:
                kind = (
                    "staticmethod"
                    if has_decorator(node, "staticmethod")
                    else "classmethod"
                    if has_decorator(node, "classmethod")
                    else "method"
                )
                k = "%s %s %s" % (key, kind, name)
            if has_decorator(node, "overload"):
                members.setdefault(k, []).append(signature(node, kind != "staticmethod"))
            elif k not in members:
                members[k] = [signature(node, kind != "staticmethod")]
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            out += class_lines("%s class %s" % (key, node.name), node)
        elif (
            isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and not node.target.id.startswith("_")
        ):
            s = "%s attribute %s: %s" % (key, node.target.id, declared_type(node.annotation, node.value))
            if node.value is not None and not enum:
                s += " = ..."
            out.append(s)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if not isinstance(t, ast.Name) or t.id.startswith("_"):
                    continue
                if enum:
                    out.append("%s member %s: %s" % (key, t.id, ast.unparse(node.value)))
                else:
                    out.append("%s attribute %s: %s = ..." % (key, t.id, value_type(node.value) or "?"))
    for k, sigs in members.items():
        out += [k + ": " + s for s in sigs]
    out += instance_attributes(key, cls, out)
    return out


def instance_attributes(key, cls, declared):
    """The public attributes __init__ (the implementation of an overloaded
    one) sets on self (self.x = ... or self.x: T = ...) that the class body
    does not declare: their
    annotation, else the literal's type, the class a call constructs, or a
    parameter's annotation; "?" when none says."""
    inits = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"]
    # An overloaded constructor sets its attributes in the implementation, not in the overloads.
    init = next((n for n in inits if not has_decorator(n, "overload")), inits[0] if inits else None)
    if init is None or not (init.args.posonlyargs + init.args.args):
        return []
    me = (init.args.posonlyargs + init.args.args)[0].arg
    params = {a.arg: a.annotation for a in init.args.posonlyargs + init.args.args + init.args.kwonlyargs}
    taken = {l[len(key) + 1 :].split(":")[0].split(" ")[-1] for l in declared if l.startswith(key + " ")}
    out = {}
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            targets, annotation, value = node.targets, None, node.value
        elif isinstance(node, ast.AnnAssign):
            targets, annotation, value = [node.target], node.annotation, node.value
        else:
            continue
        for t in targets:
            if not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me):
                continue
            name = t.attr
            if name.startswith("_") or name in taken or name in out:
                continue
            typ = (
                declared_type(annotation, value)
                if annotation is not None
                else value_type(value)
                if value is not None
                else None
            )
            if typ is None and isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
                f = ast.unparse(value.func)
                if f.split(".")[-1][:1].isupper():  # a class constructed
                    typ = f
            if typ is None and isinstance(value, ast.Name) and params.get(value.id) is not None:
                typ = ann(params[value.id])
            out[name] = "%s attribute %s: %s" % (key, name, typ or "?")
    return list(out.values())


def declared_type(annotation, value, defs=None):
    """An annotation's type: Final[T] is T, a bare Final the value's type."""
    a = ann(annotation)
    if a in ("Final", "typing.Final"):
        return (value_type(value, defs) if value is not None else None) or "?"
    for p in ("Final[", "typing.Final["):
        if a.startswith(p) and a.endswith("]"):
            return a[len(p) : -1]
    return a


def literal_members(v):
    """The literals of Literal[...] or a union of them, or None."""
    if isinstance(v, ast.Subscript) and ast.unparse(v.value).split(".")[-1] == "Literal":
        elts = v.slice.elts if isinstance(v.slice, ast.Tuple) else [v.slice]
        if all(isinstance(e, ast.Constant) for e in elts):
            return [repr(e.value) for e in elts]
        return None
    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.BitOr):
        a, b = literal_members(v.left), literal_members(v.right)
        return a + b if a is not None and b is not None else None
    return None


def alias_lines(modname, name, v):
    """A type alias; an alias of literals gives one member line per literal
    (a literal added is an addition, one removed a removal)."""
    members = literal_members(v)
    if members is None:
        return ["%s type %s: = %s" % (modname, name, ann(v))]
    return ["%s type %s: = Literal" % (modname, name)] + [
        "%s type %s member %s: literal" % (modname, name, m) for m in members
    ]


def definition_lines(modname, name, node, defs):
    if isinstance(node, list) or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return function_lines("%s function %s" % (modname, name), node, False)
    if isinstance(node, ast.ClassDef):
        return class_lines("%s class %s" % (modname, name), node)
    if isinstance(node, ast.AnnAssign):
        a = ann(node.annotation)
        if a in ("TypeAlias", "typing.TypeAlias") and node.value is not None:
            return alias_lines(modname, name, node.value)
        return ["%s const %s: %s" % (modname, name, declared_type(node.annotation, node.value, defs))]
    if isinstance(node, ast.Assign):
        v = node.value
        t = value_type(v, defs)
        if t is not None:
            return ["%s const %s: %s" % (modname, name, t)]
        if isinstance(v, ast.Call):
            f = ast.unparse(v.func)
            if f.split(".")[-1] in ("TypeVar", "ParamSpec", "TypeVarTuple"):
                return ["%s typevar %s: %s" % (modname, name, ast.unparse(v))]
            if f.split(".")[-1] == "NewType":
                return ["%s type %s: = %s" % (modname, name, ast.unparse(v))]
            return ["%s const %s: = %s(...)" % (modname, name, f)]
        if is_typealias_value(v):
            return alias_lines(modname, name, v)
        return ["%s const %s: = %s" % (modname, name, ann(v))]
    raise AssertionError(node)


class Package:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.name = os.path.basename(self.root)
        if not os.path.isfile(os.path.join(self.root, "__init__.py")):
            fail("%s is not a package (no __init__.py)" % root)
        self.modules = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames[:] = sorted(d for d in dirnames if os.path.isfile(os.path.join(dirpath, d, "__init__.py")))
            rel = os.path.relpath(dirpath, self.root)
            parts = [self.name] + ([] if rel == "." else rel.split(os.sep))
            for f in sorted(filenames):
                if not f.endswith(".py"):
                    continue
                if f == "__init__.py":
                    name, is_pkg = ".".join(parts), True
                else:
                    name, is_pkg = ".".join(parts + [f[:-3]]), False
                self.modules[name] = Module(name, os.path.join(dirpath, f), is_pkg)

    def public(self, modname):
        return all(not p.startswith("_") for p in modname.split("."))

    def exported(self, mod, seen=()):
        """The names mod exports, in order: its __all__ or its public names."""
        if mod.name in seen:
            fail("%s: star imports form a cycle" % mod.path)
        seen = seen + (mod.name,)
        if mod.all is not None:
            out = []
            for n in mod.all:
                if isinstance(n, tuple):
                    target = self.modules.get(n[1])
                    if target is None:
                        fail("%s: __all__ adds the __all__ of %s, which is not in the package" % (mod.path, n[1]))
                    out += self.exported(target, seen)
                else:
                    out.append(n)
            return out
        out = [n for n in mod.defs if not n.startswith("_")]
        out += [n for n, (_, _, explicit) in mod.imports.items() if explicit and not n.startswith("_")]
        for s in mod.stars:
            if s in self.modules:
                out += [n for n in self.exported(self.modules[s], seen) if not n.startswith("_")]
        return out

    def lookup(self, mod, name, depth=0):
        """Where name, as mod sees it, is defined: (module name, name, node),
        (module name, None, None) for a module, or (origin, None, "alias")."""
        if depth > 50:
            fail("%s: %s: imports form a cycle" % (mod.path, name))
        if name in mod.defs:
            return (mod.name, name, mod.defs[name])
        if name in mod.imports:
            src, orig, _ = mod.imports[name]
            if orig is None:
                return (src, None, None) if src in self.modules else (src, None, "alias")
            sub = src + "." + orig
            if sub in self.modules and (src not in self.modules or orig not in self.modules[src].defs):
                return (sub, None, None)
            if src in self.modules:
                return self.lookup(self.modules[src], orig, depth + 1)
            return (sub, None, "alias")
        for s in mod.stars:
            if s in self.modules and name in self.exported(self.modules[s]):
                return self.lookup(self.modules[s], name, depth + 1)
        sub = mod.name + "." + name
        if mod.is_pkg and sub in self.modules:
            return (sub, None, None)
        return None

    def lines(self):
        out = set()
        for modname in sorted(self.modules):
            if not self.public(modname):
                continue
            mod = self.modules[modname]
            for name in self.exported(mod):
                found = self.lookup(mod, name)
                if found is None:
                    fail("%s: %s is exported (in __all__) but not defined" % (mod.path, name))
                where, orig, node = found
                if node == "alias":
                    out.add("%s alias %s: %s" % (modname, name, where))
                elif node is None:
                    out.add("%s module %s: module" % (modname, name))
                else:
                    out.update(definition_lines(modname, name, node, self.modules[where].defs))
        return sorted(out)


def main():
    if len(sys.argv) != 2:
        fail("usage: pyapi.py PACKAGE_DIR")
    for line in Package(sys.argv[1]).lines():
        if "\n" in line:
            fail("a line spans lines: %r" % line)
        print(line)


main()
