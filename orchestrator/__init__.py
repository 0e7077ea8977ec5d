"""deploy: SGLang + EAGLE-3 as systemd services, with a diagnosis when a launch fails.

The data travels one way: profile -> validated spec -> rendered units -> systemd ->
health/journal -> diagnosis. Each stage is its own module with plain data in and out.
"""

__version__ = "0.1.0"
