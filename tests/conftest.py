from tests.box import box  # noqa: F401
