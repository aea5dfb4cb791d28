//go:build unix

package membership

import (
	"testing"

	"github.com/couriernet/courier/rln/internal/chaintest"
)

// TestABIMatchesContract: every function, event and error this package
// calls or decodes exists with the same signature (so the same selector or
// topic) in the compiled test contracts, whose interface follows
// waku-rlnv2-contract's WakuRlnV2, LinearPriceCalculator and ERC-20.
func TestABIMatchesContract(t *testing.T) {
	a := chaintest.Compile(t)
	contract := a.ParsedABI(t, chaintest.MembershipContract)
	calc := a.ParsedABI(t, chaintest.CalculatorContract)
	token := a.ParsedABI(t, chaintest.TokenContract)

	sigs := map[string]bool{}
	for _, m := range contract.Methods {
		sigs[m.Sig] = true
	}
	for _, e := range contract.Events {
		sigs["event "+e.Sig] = true
	}
	for _, e := range contract.Errors {
		sigs["error "+e.Sig] = true
	}
	for _, m := range membershipABI.Methods {
		if !sigs[m.Sig] {
			t.Errorf("contract has no function %s", m.Sig)
		}
	}
	for _, e := range membershipABI.Events {
		if !sigs["event "+e.Sig] {
			t.Errorf("contract has no event %s", e.Sig)
		}
	}
	for _, e := range membershipABI.Errors {
		if !sigs["error "+e.Sig] {
			t.Errorf("contract has no error %s", e.Sig)
		}
	}
	if _, ok := calc.Methods["calculate"]; !ok || calc.Methods["calculate"].Sig != tokenABI.Methods["calculate"].Sig {
		t.Errorf("price calculator: calculate is %q", calc.Methods["calculate"].Sig)
	}
	for _, name := range []string{"allowance", "balanceOf", "approve"} {
		if token.Methods[name].Sig != tokenABI.Methods[name].Sig {
			t.Errorf("token: %s is %q, want %q", name, token.Methods[name].Sig, tokenABI.Methods[name].Sig)
		}
	}
	// The calls nwaku v0.38.1 makes by selector (group_manager.nim).
	for _, sig := range []string{"root()", "getMerkleProof(uint40)", "nextFreeIndex()", "isInMembershipSet(uint256)",
		"maxMembershipRateLimit()", "register(uint256,uint32,uint256[])"} {
		if !sigs[sig] {
			t.Errorf("contract lacks nwaku's %s", sig)
		}
	}
	if e := membershipABI.Events["MembershipRegistered"]; e.Sig != "MembershipRegistered(uint256,uint256,uint32)" {
		t.Errorf("MembershipRegistered is %s", e.Sig)
	}
}
