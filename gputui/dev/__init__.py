"""Developer tooling (benchmark, reliability suite, README/screenshot generators): not shipped in the wheel."""
