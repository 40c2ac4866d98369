import TocsinCore
// Owned by the desktop helper.
enum DesktopPlaceholder {}
