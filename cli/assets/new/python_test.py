"""Runs with plain Python, no component build: python3 -m unittest"""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).parent / ".toolhost" / "python"))

import app  # noqa: E402


class Greets(unittest.TestCase):
    def test_greets(self):
        self.assertEqual(app.{{tool}}("Ada", times=2), "Hello, Ada!\nHello, Ada!")

    def test_schema(self):
        schema = app.{{tool}}.input_schema
        self.assertEqual(schema["required"], ["name"])
        self.assertEqual(schema["properties"]["times"], {"type": "integer", "description": "How many times to say it.", "default": 1})


if __name__ == "__main__":
    unittest.main()
