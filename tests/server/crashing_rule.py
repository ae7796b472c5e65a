"""The stand-in rules, with TW900 raising on every file: the server must keep serving.

The engine's strict mode (which the test session sets, and a subprocess inherits) would
re-raise the rule's exception; this server is about the degradation users get, so it
runs without it."""

import os
import sys

import fake_rules


def explode(self, facts):
    raise RuntimeError("rule bug")


fake_rules.PrintCall.check = explode

if __name__ == "__main__":
    os.environ["TORCHWARD_STRICT"] = "0"
    fake_rules.install()
    from torchward.server import main

    sys.exit(main(sys.argv[1:]))
