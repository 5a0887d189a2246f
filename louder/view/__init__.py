"""``louder view RUN_DIR``: replay a recorded network run in the browser (Mesa SolaraViz), calling
no model."""
