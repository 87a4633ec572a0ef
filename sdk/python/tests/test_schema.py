"""The schema derivation of @tool, with plain python3 (no component build):
python3 -m unittest discover -s sdk/python/tests"""

import os
import sys
import typing
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from toolhost_sdk import FUNCTION_TOOL_ASK, ToolError, tool  # noqa: E402
from toolhost_sdk.schema import parse_docstring  # noqa: E402


@tool(read_only=True, concurrency_safe=True, reads=["$WORKDIRS"])
def word_count(paths: list[str], top: int = 0, unit: typing.Literal["words", "lines"] = "words",
               label: typing.Optional[str] = None, ratio: float = 1.5, quiet: bool = False, extra: dict = None):
    """Counts words.

    More text.

    Args:
        paths: Absolute paths
            of the files.
        top (int): How many.
        unit: What to count.

    Returns:
        The counts.
    """
    return paths, top, unit, label


class SchemaDerivation(unittest.TestCase):
    def test_name_description_and_flags(self):
        self.assertEqual(word_count.name, "word_count")
        self.assertEqual(word_count.description, "Counts words.\n\nMore text.")
        self.assertTrue(word_count.read_only and word_count.concurrency_safe)
        self.assertEqual(word_count.reads, ("$WORKDIRS",))

    def test_schema_from_hints_docstring_and_defaults(self):
        self.assertEqual(word_count.input_schema, {
            "type": "object",
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}, "description": "Absolute paths of the files."},
                "top": {"type": "integer", "description": "How many.", "default": 0},
                "unit": {"type": "string", "enum": ["words", "lines"], "description": "What to count.",
                         "default": "words"},
                "label": {"type": "string"},
                "ratio": {"type": "number", "default": 1.5},
                "quiet": {"type": "boolean", "default": False},
                "extra": {"type": "object"},
            },
            "required": ["paths"],
            "additionalProperties": False,
        })

    def test_call_fills_defaults_and_optionals(self):
        self.assertEqual(word_count.call({"paths": ["/a"]}), (["/a"], 0, "words", None))
        self.assertEqual(word_count.call({"paths": ["/a"], "top": None, "label": "x"}), (["/a"], 0, "words", "x"))
        with self.assertRaises(ToolError) as e:
            word_count.call({"paths": [], "bogus": 1})
        self.assertEqual(e.exception.kind, "invalid-input")

    def test_function_tools_ask_and_read_only_per_call(self):
        @tool(read_only=lambda path, write=False: not write)
        def touch(path: str, write: bool = False):
            """Touches."""
        self.assertEqual(touch.check_permissions({}, None).message, FUNCTION_TOOL_ASK)
        self.assertTrue(touch.check_read_only({"path": "a"}))
        self.assertFalse(touch.check_read_only({"path": "a", "write": True}))
        self.assertFalse(touch.read_only)

    def test_unsupported_hints_and_missing_docstrings_are_refused(self):
        with self.assertRaises(TypeError):
            @tool
            def bad(x: complex):
                """Bad."""
        with self.assertRaises(ValueError):
            @tool
            def undocumented(x: str):
                pass

    def test_docstring_without_args(self):
        self.assertEqual(parse_docstring("  One line.  "), ("One line.", {}))


if __name__ == "__main__":
    unittest.main()
