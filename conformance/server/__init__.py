"""The reference-profile server: every catalogued quirk served over real HTTP.

``toolcall-conformance serve --port 8765`` runs it; ``testing.running_server()`` runs it in-process.
See ``docs/server.md``.
"""

from conformance.server.app import Reply, create_app, respond, serve
from conformance.server.profiles import PROFILES, Profile, example_request

__all__ = ["PROFILES", "Profile", "Reply", "create_app", "example_request", "respond", "serve"]
