"""The stand-in rules, with TW900 raising on every file: the server must keep serving."""

import sys

import fake_rules


def explode(self, facts):
    raise RuntimeError("rule bug")


fake_rules.PrintCall.check = explode

if __name__ == "__main__":
    fake_rules.install()
    from torchward.server import main

    sys.exit(main(sys.argv[1:]))
