import os
import sys

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "soak: long repeated-search checks (compile count, memory); run in CI at a "
        "small size")
