//go:build napi

package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"encoding/hex"
	"unsafe"

	"github.com/couriernet/courier/libnet/internal/txsender"
)

// goSenderAddress is lib-net's getSenderAddress (lib.rs
// get_sender_address, shardeum_utils/src/lib.rs): it writes the sender's
// address ("0x" and 40 lowercase hex digits) to addr and whether the gas
// limit covers the intrinsic gas to gasValid.
//
//export goSenderAddress
func goSenderAddress(rawHex *C.char, n C.size_t, addr *C.char, gasValid *C.int, errbuf *C.char, en C.size_t) C.int {
	a, ok, err := txsender.Sender(C.GoStringN(rawHex, C.int(n)))
	if err != nil {
		setErr(errbuf, en, "getSenderAddress: "+err.Error())
		return errPlain
	}
	out := unsafe.Slice((*byte)(unsafe.Pointer(addr)), 43)
	copy(out, "0x"+hex.EncodeToString(a[:]))
	out[42] = 0
	if ok {
		*gasValid = 1
	}
	return 0
}
