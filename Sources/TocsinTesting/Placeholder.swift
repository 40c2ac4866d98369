enum TocsinTestingPlaceholder {}
