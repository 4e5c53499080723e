"""scripts/check_structure.py on small made-up trees: it must report an include of a higher layer,
a function over the budget and a stale exception, accept a listed exception, and pass a clean tree."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "check_structure.py")


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(textwrap.dedent(text))


def long_function(name, lines):
    body = "".join(f"  x += {i};\n" for i in range(lines - 3))
    return f"int {name}(int x) {{\n{body}  return x;\n}}\n"


class CheckStructureTest(unittest.TestCase):
    def make_tree(self):
        root = tempfile.mkdtemp()
        write(root, "CMakeLists.txt", "set(IL_SERVE_CORE_NAMES infer_request)\n")
        write(root, "src/base/status.h", "#pragma once\n")
        write(root, "src/graph/graph.h", '#pragma once\n#include "base/status.h"\n')
        write(root, "src/runtime/plan.h", '#pragma once\n#include "graph/graph.h"\n')
        write(root, "src/serve/infer_request.h", '#pragma once\n#include "base/status.h"\n')
        write(root, "src/serve/infer_request.cc", '#include "serve/infer_request.h"\n')
        write(root, "src/serve/model_manager.h", '#pragma once\n#include "runtime/plan.h"\n')
        write(root, "src/serve/model_manager.cc", '#include "serve/model_manager.h"\n')
        write(root, "scripts/structure_exceptions.txt", "# none\n")
        return root

    def run_check(self, root, *args):
        p = subprocess.run([sys.executable, SCRIPT, "--root", root, *args], capture_output=True, text=True)
        return p.returncode, p.stdout

    def test_clean_tree_passes(self):
        rc, out = self.run_check(self.make_tree())
        self.assertEqual(rc, 0, out)
        self.assertIn("0 problems", out)

    def test_include_of_a_higher_layer_is_reported(self):
        root = self.make_tree()
        write(root, "src/graph/bad.cc", '#include "runtime/plan.h"\n')
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/graph/bad.cc (graph) includes runtime/plan.h (runtime)", out)

    def test_serve_core_may_not_include_the_rest_of_serve(self):
        root = self.make_tree()
        write(root, "src/serve/infer_request.cc", '#include "serve/model_manager.h"\n')
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1, out)
        self.assertIn("(serve_core) includes serve/model_manager.h (serve)", out)

    def test_long_function_is_reported_and_an_exception_accepts_it(self):
        root = self.make_tree()
        write(root, "src/graph/long.cc", long_function("Huge", 160) + long_function("Fine", 150))
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1, out)
        self.assertIn("src/graph/long.cc:1 Huge is 160 lines (budget 150)", out)
        self.assertNotIn("Fine", out)
        write(root, "scripts/structure_exceptions.txt", "function src/graph/long.cc:Huge  a table, read as one\n")
        rc, out = self.run_check(root)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 listed exceptions used", out)

    def test_stale_exception_is_reported(self):
        root = self.make_tree()
        write(root, "scripts/structure_exceptions.txt",
              "include src/graph/gone.cc -> runtime/plan.h  was needed once\n")
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1, out)
        self.assertIn("stale exception", out)

    def test_malformed_exception_line_is_reported(self):
        root = self.make_tree()
        write(root, "scripts/structure_exceptions.txt", "function src/graph/long.cc:Huge\n")
        rc, out = self.run_check(root)
        self.assertEqual(rc, 1, out)
        self.assertIn("structure_exceptions.txt:1", out)


if __name__ == "__main__":
    unittest.main()
