enum TocsinCorePlaceholder {}
