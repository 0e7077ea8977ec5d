"""The systemd stage: render units, install them, control the service, keep releases."""
