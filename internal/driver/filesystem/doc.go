// Package filesystem holds the development Configuration and Secret Drivers that keep one file per
// resource under a root directory. Directories are created
// with mode 0700 and files with 0600; every write goes to an exclusively created temporary file in
// the same directory and is renamed into place, so a reader never sees a partial file.
//
// The Secret Driver is for development only: its factory refuses production.
package filesystem
