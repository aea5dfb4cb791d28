package membership

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/rpc"
)

// contractABI is the part of The Waku Network's membership contract
// (waku-rlnv2-contract src/WakuRlnV2.sol and src/Membership.sol, the
// contract nwaku v0.38.1 pins) that courier calls, with the events it reads
// and the errors it names: the calls of nwaku's group_manager/on_chain
// (rpc_wrapper.nim contract(WakuRlnContract) and the raw eth_calls of
// group_manager.nim), plus minMembershipRateLimit, priceCalculator and
// MembershipErased, which our registration checks and catch-up read.
const contractABI = `[
{"type":"function","name":"root","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"getMerkleProof","stateMutability":"view","inputs":[{"name":"index","type":"uint40"}],"outputs":[{"name":"","type":"uint256[20]"}]},
{"type":"function","name":"nextFreeIndex","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint32"}]},
{"type":"function","name":"isInMembershipSet","stateMutability":"view","inputs":[{"name":"idCommitment","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
{"type":"function","name":"maxMembershipRateLimit","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint32"}]},
{"type":"function","name":"minMembershipRateLimit","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"uint32"}]},
{"type":"function","name":"priceCalculator","stateMutability":"view","inputs":[],"outputs":[{"name":"","type":"address"}]},
{"type":"function","name":"register","stateMutability":"nonpayable","inputs":[{"name":"idCommitment","type":"uint256"},{"name":"rateLimit","type":"uint32"},{"name":"idCommitmentsToErase","type":"uint256[]"}],"outputs":[]},
{"type":"event","name":"MembershipRegistered","anonymous":false,"inputs":[{"name":"idCommitment","type":"uint256","indexed":false},{"name":"membershipRateLimit","type":"uint256","indexed":false},{"name":"index","type":"uint32","indexed":false}]},
{"type":"event","name":"MembershipErased","anonymous":false,"inputs":[{"name":"idCommitment","type":"uint256","indexed":false},{"name":"membershipRateLimit","type":"uint32","indexed":false},{"name":"index","type":"uint32","indexed":false}]},
{"type":"error","name":"InvalidIdCommitment","inputs":[{"name":"idCommitment","type":"uint256"}]},
{"type":"error","name":"InvalidMembershipRateLimit","inputs":[]},
{"type":"error","name":"CannotExceedMaxTotalRateLimit","inputs":[]},
{"type":"error","name":"MembershipDoesNotExist","inputs":[{"name":"idCommitment","type":"uint256"}]},
{"type":"error","name":"CannotEraseActiveMembership","inputs":[{"name":"idCommitment","type":"uint256"}]},
{"type":"error","name":"NonHolderCannotEraseGracePeriodMembership","inputs":[{"name":"idCommitment","type":"uint256"}]}
]`

// depositABI is the price calculator's calculate (waku-rlnv2-contract
// src/IPriceCalculator.sol) and the ERC-20 calls of the approval step, with
// OpenZeppelin 5's ERC-20 errors.
const depositABI = `[
{"type":"function","name":"calculate","stateMutability":"view","inputs":[{"name":"rateLimit","type":"uint32"}],"outputs":[{"name":"","type":"address"},{"name":"","type":"uint256"}]},
{"type":"function","name":"allowance","stateMutability":"view","inputs":[{"name":"owner","type":"address"},{"name":"spender","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
{"type":"function","name":"approve","stateMutability":"nonpayable","inputs":[{"name":"spender","type":"address"},{"name":"value","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
{"type":"error","name":"ERC20InsufficientAllowance","inputs":[{"name":"spender","type":"address"},{"name":"allowance","type":"uint256"},{"name":"needed","type":"uint256"}]},
{"type":"error","name":"ERC20InsufficientBalance","inputs":[{"name":"sender","type":"address"},{"name":"balance","type":"uint256"},{"name":"needed","type":"uint256"}]}
]`

var (
	membershipABI = mustABI(contractABI)
	tokenABI      = mustABI(depositABI)
)

func mustABI(s string) abi.ABI {
	a, err := abi.JSON(strings.NewReader(s))
	if err != nil {
		panic(fmt.Sprintf("membership: bad built-in ABI: %v", err))
	}
	return a
}

// eventID returns the topic of the contract event name.
func eventID(name string) [32]byte {
	return membershipABI.Events[name].ID
}

// revertReason names the contract error in err's revert data, if it
// carries one this package knows, as "Name(args)"; otherwise it returns "".
func revertReason(err error) string {
	var de rpc.DataError
	if !errors.As(err, &de) {
		return ""
	}
	hexData, ok := de.ErrorData().(string)
	if !ok {
		return ""
	}
	data, ok := decodeHex(hexData)
	if !ok || len(data) < 4 {
		return ""
	}
	if reason, err := abi.UnpackRevert(data); err == nil {
		return reason
	}
	for _, a := range []*abi.ABI{&membershipABI, &tokenABI} {
		for name, e := range a.Errors {
			if [4]byte(e.ID[:4]) != [4]byte(data[:4]) {
				continue
			}
			args, err := e.Inputs.Unpack(data[4:])
			if err != nil || len(args) == 0 {
				return name
			}
			parts := make([]string, len(args))
			for i, v := range args {
				parts[i] = fmt.Sprint(v)
			}
			return name + "(" + strings.Join(parts, ", ") + ")"
		}
	}
	return ""
}

// decodeHex decodes a 0x-prefixed hex string.
func decodeHex(s string) ([]byte, bool) {
	s, ok := strings.CutPrefix(s, "0x")
	if !ok || len(s)%2 != 0 {
		return nil, false
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}
