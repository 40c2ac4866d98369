import CDBus
enum DBusPlaceholder {}
