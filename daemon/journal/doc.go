// Package journal writes kmaint's reboot requests to the node's systemd
// journal and reads them back. The journal binds each entry to the boot it
// was written in (_BOOT_ID) and to the user who wrote it (_UID), both set by
// journald itself, so a request is satisfied by the first reboot after it
// and only root can make one.
package journal
