from tests.box import box, box_port, clean_box  # noqa: F401
