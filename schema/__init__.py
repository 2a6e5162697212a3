"""The JSON Schemas, shipped as package data (`tracegrade.schemas`, read with importlib.resources).

No code: this file makes the folder a package, so an installed wheel and an editable install
find the schemas the same way."""
