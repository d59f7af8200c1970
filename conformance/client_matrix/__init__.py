"""Which client libraries survive which providers: real clients judged on every stream.

Every client library under ``clients/`` (Python and npm adapters) is pointed at every
reference profile (live, over HTTP) and every recorded provider cassette (replayed byte for
byte), optionally at field captures; what each library assembled is judged call by call
against what a correct client does with the same bytes (``judge.py``). ``python -m conformance.client_matrix``
writes ``reports/client-matrix.{json,md,html}``; ``nox -s clients`` installs and runs it.
"""
