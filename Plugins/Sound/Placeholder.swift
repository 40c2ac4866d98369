import TocsinCore
// Owned by the sound helper.
enum SoundPlaceholder {}
